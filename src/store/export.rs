//! `gpassk store export`: one table of the database, streamed as CSV (every text cell behind
//! the formula guard) or as Parquet (typed columns: BIGINT as INT64, DOUBLE PRECISION as DOUBLE,
//! TEXT as UTF-8 strings, all nullable), for notebooks.

use super::rows::Value;
use super::{Column, Kind, RowSink, Store};
use anyhow::{Context, Result};
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::io::Write;
use std::sync::Arc;

/// The file formats of `store export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Parquet,
}

/// Writes `table` to `out`; the rows written.
pub fn export(
    store: &mut Store,
    table: &str,
    format: Format,
    out: impl Write + Send,
) -> Result<u64> {
    match format {
        Format::Csv => csv(store, table, out),
        Format::Parquet => parquet(store, table, out),
    }
}

/// CSV rows as they come.
struct CsvOut<W: Write> {
    w: csv::Writer<W>,
    rows: u64,
}

impl<W: Write> RowSink for CsvOut<W> {
    fn columns(&mut self, columns: &[Column]) -> Result<()> {
        Ok(self.w.write_record(columns.iter().map(|c| &c.name))?)
    }

    fn row(&mut self, row: Vec<Value>) -> Result<()> {
        self.rows += 1;
        self.w.write_record(row.iter().map(|v| match v {
            Value::Null => String::new(),
            Value::Int(n) => n.to_string(),
            Value::Real(x) => x.to_string(),
            // Names and messages come from servers and configs: never a spreadsheet formula.
            Value::Text(s) => crate::report::csv_cell(s).into_owned(),
        }))?;
        Ok(())
    }
}

fn csv(store: &mut Store, table: &str, out: impl Write) -> Result<u64> {
    let mut sink = CsvOut {
        w: csv::Writer::from_writer(out),
        rows: 0,
    };
    store.each_row(table, &mut sink)?;
    sink.w.flush()?;
    Ok(sink.rows)
}

/// Rows per Parquet row group: what is held in memory at once.
const ROW_GROUP: usize = 50_000;

/// The Parquet file being written: its writer (once the columns are known), the columns, and
/// the rows of the next row group.
struct ParquetOut<W: Write + Send> {
    table: String,
    out: Option<W>,
    file: Option<SerializedFileWriter<W>>,
    columns: Vec<Column>,
    pending: Vec<Vec<Value>>,
    rows: u64,
}

impl<W: Write + Send> RowSink for ParquetOut<W> {
    fn columns(&mut self, columns: &[Column]) -> Result<()> {
        let out = self.out.take().context("columns come once")?;
        self.file = Some(open_parquet(&self.table, columns, out)?);
        self.columns = columns.to_vec();
        Ok(())
    }

    fn row(&mut self, row: Vec<Value>) -> Result<()> {
        self.rows += 1;
        self.pending.push(row);
        if self.pending.len() == ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }
}

fn parquet<W: Write + Send>(store: &mut Store, table: &str, out: W) -> Result<u64> {
    let mut sink = ParquetOut {
        table: table.to_string(),
        out: Some(out),
        file: None,
        columns: Vec::new(),
        pending: Vec::new(),
        rows: 0,
    };
    store.each_row(table, &mut sink)?;
    sink.flush()?;
    if let Some(file) = sink.file.take() {
        file.close()?;
    }
    Ok(sink.rows)
}

/// A Parquet writer whose schema is the table's columns, every one nullable.
fn open_parquet<W: Write + Send>(
    table: &str,
    columns: &[Column],
    out: W,
) -> Result<SerializedFileWriter<W>> {
    let fields = columns
        .iter()
        .map(|c| {
            let (physical, logical) = match c.kind {
                Kind::Int => (Physical::INT64, None),
                Kind::Real => (Physical::DOUBLE, None),
                Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            };
            Ok(Arc::new(
                Type::primitive_type_builder(&c.name, physical)
                    .with_repetition(Repetition::OPTIONAL)
                    .with_logical_type(logical)
                    .build()?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let schema = Type::group_type_builder(table)
        .with_fields(fields)
        .build()?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("gpassk {}", env!("CARGO_PKG_VERSION")))
        .build();
    Ok(SerializedFileWriter::new(
        out,
        Arc::new(schema),
        Arc::new(props),
    )?)
}

impl<W: Write + Send> ParquetOut<W> {
    /// Writes the pending rows as one row group.
    fn flush(&mut self) -> Result<()> {
        let (Some(file), false) = (self.file.as_mut(), self.pending.is_empty()) else {
            return Ok(());
        };
        let mut group = file.next_row_group()?;
        let mut i = 0;
        while let Some(mut col) = group.next_column()? {
            let column = &self.columns[i];
            let cells = self.pending.iter().map(|r| &r[i]);
            let defs: Vec<i16> = cells
                .clone()
                .map(|v| i16::from(*v != Value::Null))
                .collect();
            let wrong = |_: &Value| {
                anyhow::anyhow!(
                    "column `{}` holds a value of another type than its declared {:?}",
                    column.name,
                    column.kind
                )
            };
            match column.kind {
                Kind::Int => {
                    let values = (cells.filter(|v| **v != Value::Null))
                        .map(|v| match v {
                            Value::Int(n) => Ok(*n),
                            v => Err(wrong(v)),
                        })
                        .collect::<Result<Vec<i64>>>()?;
                    col.typed::<Int64Type>()
                        .write_batch(&values, Some(&defs), None)?;
                }
                Kind::Real => {
                    let values = (cells.filter(|v| **v != Value::Null))
                        .map(|v| match v {
                            Value::Real(x) => Ok(*x),
                            Value::Int(n) => Ok(*n as f64),
                            v => Err(wrong(v)),
                        })
                        .collect::<Result<Vec<f64>>>()?;
                    col.typed::<DoubleType>()
                        .write_batch(&values, Some(&defs), None)?;
                }
                Kind::Text => {
                    let values: Vec<ByteArray> = (cells.filter(|v| **v != Value::Null))
                        .map(|v| match v {
                            Value::Text(s) => ByteArray::from(s.as_str()),
                            Value::Int(n) => ByteArray::from(n.to_string().as_str()),
                            Value::Real(x) => ByteArray::from(x.to_string().as_str()),
                            Value::Null => ByteArray::from(""),
                        })
                        .collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&values, Some(&defs), None)?;
                }
            }
            col.close()?;
            i += 1;
        }
        group.close()?;
        self.pending.clear();
        Ok(())
    }
}
