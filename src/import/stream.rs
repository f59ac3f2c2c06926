//! Reading harness files without holding them whole: text line by line (whatever ends the
//! lines, a UTF-8 byte-order mark skipped), JSON Lines line by line, and a top-level JSON array
//! or object entry by entry, each line or entry under a size bound.

use super::files::lfs_pointer_text;
use super::source::{At, ImportError, Sink};
use crate::util::{open_regular, MAX_LINE};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::cell::Cell;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// One entry of a JSON array or object (or one line) may hold this much: long reasoning outputs
/// repeated K times make lines of megabytes, never of gigabytes.
pub(crate) const MAX_ENTRY: u64 = MAX_LINE as u64;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Skips a UTF-8 byte-order mark at the start of `reader`; refuses UTF-16 text, which no JSON
/// reader takes.
fn skip_bom(reader: &mut impl BufRead, path: &Path) -> Result<(), ImportError> {
    let head = reader.fill_buf().map_err(ImportError::io("read", path))?;
    if head.starts_with(BOM) {
        reader.consume(BOM.len());
    } else if head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF") {
        return Err(ImportError::bad(
            path,
            At::File,
            "UTF-16 text: save it as UTF-8",
        ));
    }
    Ok(())
}

/// A text file line by line: a line ends at `\n`, `\r\n` or a lone `\r` (old Mac files), none
/// is longer than a bound, and a UTF-8 byte-order mark at the start is skipped.
pub(crate) struct TextLines {
    reader: BufReader<std::fs::File>,
    path: PathBuf,
    max: usize,
    line: u64,
    /// The last line ended at `\r`: a `\n` right after it belongs to that line end.
    after_cr: bool,
}

impl TextLines {
    pub(crate) fn open(path: &Path) -> Result<TextLines, ImportError> {
        let file = open_regular(path).map_err(ImportError::io("read", path))?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        skip_bom(&mut reader, path)?;
        Ok(TextLines {
            reader,
            path: path.to_path_buf(),
            max: MAX_LINE,
            line: 0,
            after_cr: false,
        })
    }

    /// Reads the next line into `buf` (cleared first, without its line end) and returns its
    /// 1-based number, or None at the end.
    pub(crate) fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<Option<u64>, ImportError> {
        buf.clear();
        let mut any = false;
        loop {
            let avail = (self.reader.fill_buf()).map_err(ImportError::io("read", &self.path))?;
            if avail.is_empty() {
                if !any {
                    return Ok(None);
                }
                break;
            }
            if std::mem::take(&mut self.after_cr) && avail[0] == b'\n' {
                self.reader.consume(1);
                continue;
            }
            any = true;
            match memchr::memchr2(b'\n', b'\r', avail) {
                Some(i) => {
                    buf.extend_from_slice(&avail[..i]);
                    self.after_cr = avail[i] == b'\r';
                    self.reader.consume(i + 1);
                    break;
                }
                None => {
                    let n = avail.len();
                    buf.extend_from_slice(avail);
                    self.reader.consume(n);
                }
            }
            if buf.len() > self.max {
                return Err(self.too_long());
            }
        }
        if buf.len() > self.max {
            return Err(self.too_long());
        }
        self.line += 1;
        Ok(Some(self.line))
    }

    /// The line being read is longer than the bound.
    fn too_long(&self) -> ImportError {
        let message = match self.max >= 1 << 20 {
            true => format!("longer than {} MiB", self.max >> 20),
            false => format!("longer than {} bytes", self.max),
        };
        ImportError::bad(&self.path, At::Line(self.line + 1), message)
    }
}

/// Calls `each(line number, value)` for every non-blank line of a JSON Lines file. A line that is
/// not JSON goes to [`Sink::bad`] (an error, or counted with `--skip-bad`).
pub(crate) fn json_lines(
    sink: &mut dyn Sink,
    file: usize,
    mut each: impl FnMut(&mut dyn Sink, u64, Value) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let path = sink.path(file).to_path_buf();
    let mut lines = TextLines::open(&path)?;
    let mut buf = Vec::new();
    while let Some(line) = lines.next_into(&mut buf)? {
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match lenient_json(&buf) {
            Ok(v) => each(sink, line, v)?,
            Err(_) if line == 1 && lfs_pointer_text(&buf).is_some() => {
                let said = lfs_pointer_text(&buf).unwrap_or_default();
                return Err(ImportError::bad(&path, At::File, said));
            }
            Err(e) => sink.bad(file, At::Line(line), format!("not JSON: {e}"))?,
        }
    }
    Ok(())
}

/// What the top of a JSON file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Top {
    Array,
    Object,
    Other,
}

/// The first non-blank byte of a file tells whether it is one JSON array, one object, or
/// something else (JSON Lines start with `{` too: callers decide by name and content).
pub(crate) fn peek_top(path: &Path) -> Result<Top, ImportError> {
    let mut f = open_regular(path).map_err(ImportError::io("read", path))?;
    let mut buf = [0u8; 512];
    let n = f.read(&mut buf).map_err(ImportError::io("read", path))?;
    let text = buf[..n].strip_prefix(BOM).unwrap_or(&buf[..n]);
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    Ok(match first {
        Some(b'[') => Top::Array,
        Some(b'{') => Top::Object,
        _ => Top::Other,
    })
}

/// Calls `each(key, value)` for every entry of the file's top-level JSON object or array (keys of
/// an array are positions), reading one entry at a time.
pub(crate) fn json_entries(
    path: &Path,
    mut each: impl FnMut(String, Value) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    stream_json(path, |de, count, failure| {
        let seed = Entries {
            each: &mut each,
            count,
            failure,
        };
        de.deserialize_any(seed)
    })
}

type Stream = serde_json::Deserializer<
    serde_json::de::IoRead<Bounded<PythonFloats<BufReader<std::fs::File>>>>,
>;

/// Opens `path` as one bounded stream of JSON (Python's float tokens read as texts) for `drive`,
/// which reports an `each` callback's error through `failure`; any other error names the line.
fn stream_json(
    path: &Path,
    drive: impl FnOnce(&mut Stream, &Rc<Cell<u64>>, &mut Option<ImportError>) -> serde_json::Result<()>,
) -> Result<(), ImportError> {
    let count = Rc::new(Cell::new(0u64));
    let file = open_regular(path).map_err(ImportError::io("read", path))?;
    let mut buffered = BufReader::with_capacity(1 << 16, file);
    skip_bom(&mut buffered, path)?;
    let reader = Bounded {
        inner: PythonFloats::new(buffered),
        count: count.clone(),
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut failure = None;
    let parsed = drive(&mut de, &count, &mut failure).and_then(|()| de.end());
    if let Some(e) = failure {
        return Err(e);
    }
    parsed.map_err(|e| {
        if let Some(said) = super::files::lfs_pointer(path) {
            return ImportError::bad(path, At::File, said);
        }
        ImportError::Bad {
            path: path.to_path_buf(),
            at: if e.line() > 0 {
                At::Line(e.line() as u64)
            } else {
                At::File
            },
            message: if count.get() > MAX_ENTRY {
                format!("an entry is longer than {} MiB", MAX_ENTRY >> 20)
            } else {
                format!("not JSON: {e}")
            },
        }
    })
}

/// Hands every element of `seq` to `each(position, value)`, each under the entry bound.
fn each_element<'de, A: SeqAccess<'de>>(
    mut seq: A,
    count: &Cell<u64>,
    failure: &mut Option<ImportError>,
    mut each: impl FnMut(u64, Value) -> Result<(), ImportError>,
) -> Result<(), A::Error> {
    let mut i = 0u64;
    loop {
        count.set(0);
        let Some(v) = seq.next_element::<Value>()? else {
            return Ok(());
        };
        if let Err(e) = each(i, v) {
            *failure = Some(e);
            return Err(serde::de::Error::custom("stopped"));
        }
        i += 1;
    }
}

/// A reader that fails once one entry has taken more than [`MAX_ENTRY`] bytes.
struct Bounded<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.count.get() > MAX_ENTRY {
            return Err(std::io::Error::other("entry too long"));
        }
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

struct Entries<'a, F> {
    each: &'a mut F,
    count: &'a Rc<Cell<u64>>,
    failure: &'a mut Option<ImportError>,
}

impl<'de, F: FnMut(String, Value) -> Result<(), ImportError>> DeserializeSeed<'de>
    for Entries<'_, F>
{
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, F: FnMut(String, Value) -> Result<(), ImportError>> Visitor<'de> for Entries<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array or object")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        each_element(seq, self.count, self.failure, |i, v| {
            (self.each)(i.to_string(), v)
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        loop {
            self.count.set(0);
            let Some((k, v)) = map.next_entry::<String, Value>()? else {
                return Ok(());
            };
            if let Err(e) = (self.each)(k, v) {
                *self.failure = Some(e);
                return Err(serde::de::Error::custom("stopped"));
            }
        }
    }
}

/// Python's `json` writes a float NaN or infinity as the bare tokens `NaN`, `Infinity`,
/// `-Infinity`, which strict JSON rejects: this reader turns each one outside a string into the
/// text `"NaN"` (no number: absent wherever a number is read, and never a verdict) as the bytes
/// stream by, so streamed files read like [`lenient_json`] ones.
pub(crate) struct PythonFloats<R> {
    inner: R,
    /// Bytes read and not yet looked at (a token cut by a read waits here for the rest).
    input: Vec<u8>,
    out: Vec<u8>,
    pos: usize,
    in_string: bool,
    escaped: bool,
    eof: bool,
}

const PYTHON_FLOATS: [&[u8]; 3] = [b"NaN", b"-Infinity", b"Infinity"];

impl<R: Read> PythonFloats<R> {
    pub(crate) fn new(inner: R) -> PythonFloats<R> {
        PythonFloats {
            inner,
            input: Vec::new(),
            out: Vec::new(),
            pos: 0,
            in_string: false,
            escaped: false,
            eof: false,
        }
    }

    /// Moves what can be decided of `input` to `out`; keeps a possible token's start.
    fn convert(&mut self) {
        let mut i = 0;
        while i < self.input.len() {
            let b = self.input[i];
            if self.in_string {
                match b {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
            } else if b == b'"' {
                self.in_string = true;
            } else if matches!(b, b'N' | b'I' | b'-') {
                let rest = &self.input[i..];
                if let Some(t) = PYTHON_FLOATS.iter().find(|t| rest.starts_with(t)) {
                    self.out.push(b'"');
                    self.out.extend_from_slice(t);
                    self.out.push(b'"');
                    i += t.len();
                    continue;
                }
                if !self.eof && PYTHON_FLOATS.iter().any(|t| t.starts_with(rest)) {
                    break;
                }
            }
            self.out.push(b);
            i += 1;
        }
        self.input.drain(..i);
    }
}

impl<R: Read> Read for PythonFloats<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.pos < self.out.len() {
                let n = buf.len().min(self.out.len() - self.pos);
                buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            self.out.clear();
            self.pos = 0;
            if self.eof && self.input.is_empty() {
                return Ok(0);
            }
            let mut chunk = [0u8; 1 << 14];
            let n = self.inner.read(&mut chunk)?;
            self.eof = n == 0;
            self.input.extend_from_slice(&chunk[..n]);
            self.convert();
        }
    }
}

/// Reads a small JSON file (results, reports, configs) whole, under the text-file bound.
pub(crate) fn small_json(path: &Path) -> Result<Value, ImportError> {
    let bytes = crate::util::read_bounded(path, crate::util::MAX_TEXT_FILE)
        .map_err(ImportError::io("read", path))?;
    if let Some(said) = lfs_pointer_text(&bytes) {
        return Err(ImportError::bad(path, At::File, said));
    }
    let text = bytes.strip_prefix(BOM).unwrap_or(&bytes);
    lenient_json(text).map_err(|e| ImportError::Bad {
        path: path.to_path_buf(),
        at: At::Line(e.line() as u64),
        message: format!("not JSON: {e}"),
    })
}

/// Like [`json_entries`] over a top-level JSON object, except that the array under `nested` is
/// read element by element into `each_item(position, value)`: OpenCompass results keep their
/// per-problem `details` (every prediction again) as one array that can outgrow any one-entry
/// bound. Every other entry goes to `each_top(key, value)`.
pub(crate) fn json_object_streaming(
    path: &Path,
    nested: &str,
    mut each_top: impl FnMut(String, Value) -> Result<(), ImportError>,
    mut each_item: impl FnMut(u64, Value) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    stream_json(path, |de, count, failure| {
        let seed = Nested {
            nested,
            each_top: &mut each_top,
            each_item: &mut each_item,
            count,
            failure,
        };
        de.deserialize_map(seed)
    })
}

type TopFn<'a> = dyn FnMut(String, Value) -> Result<(), ImportError> + 'a;
type ItemFn<'a> = dyn FnMut(u64, Value) -> Result<(), ImportError> + 'a;

struct Nested<'a, 'f> {
    nested: &'a str,
    each_top: &'a mut TopFn<'f>,
    each_item: &'a mut ItemFn<'f>,
    count: &'a Rc<Cell<u64>>,
    failure: &'a mut Option<ImportError>,
}

impl<'de> Visitor<'de> for Nested<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        loop {
            self.count.set(0);
            let Some(key) = map.next_key::<String>()? else {
                return Ok(());
            };
            let outcome = if key == self.nested {
                map.next_value_seed(Items {
                    each: &mut *self.each_item,
                    count: self.count,
                    failure: &mut *self.failure,
                })?;
                Ok(())
            } else {
                let v = map.next_value::<Value>()?;
                (self.each_top)(key, v)
            };
            if let Err(e) = outcome {
                *self.failure = Some(e);
            }
            if self.failure.is_some() {
                return Err(serde::de::Error::custom("stopped"));
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Nested<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// The elements of one nested array, each under the entry bound.
struct Items<'a, 'f> {
    each: &'a mut ItemFn<'f>,
    count: &'a Rc<Cell<u64>>,
    failure: &'a mut Option<ImportError>,
}

impl<'de> DeserializeSeed<'de> for Items<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        each_element(seq, self.count, self.failure, &mut *self.each)
    }
}

/// The first entry of a file's top-level JSON object or array (key and value), reading no
/// further; None when the file cannot be read or does not start so. For the readers' `claims`.
pub(crate) fn first_entry(path: &Path) -> Option<(String, Value)> {
    let mut first = None;
    // Stopping after one entry is reported as an error by the parser: that error is expected.
    let _ = json_entries(path, |k, v| {
        first = Some((k, v));
        Err(ImportError::Input(String::new()))
    });
    first
}

/// Parses JSON that Python may have written: its `json` module writes a float NaN or infinity as
/// the bare tokens `NaN`, `Infinity`, `-Infinity`, which strict JSON rejects; they read as the
/// texts `"NaN"`, `"Infinity"`, `"-Infinity"` (see [`PythonFloats`]). Strict parsing is tried
/// first, so ordinary input pays nothing.
pub(crate) fn lenient_json(bytes: &[u8]) -> serde_json::Result<Value> {
    match serde_json::from_slice(bytes) {
        Ok(v) => Ok(v),
        Err(e) => match without_python_floats(bytes) {
            Some(fixed) => serde_json::from_slice(&fixed).map_err(|_| e),
            None => Err(e),
        },
    }
}

/// `bytes` with every `NaN`, `Infinity` and `-Infinity` outside strings quoted, or None when
/// there is none.
fn without_python_floats(bytes: &[u8]) -> Option<Vec<u8>> {
    const TOKENS: [&[u8]; 3] = [b"NaN", b"-Infinity", b"Infinity"];
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if let Some(t) = TOKENS.iter().find(|t| bytes[i..].starts_with(t)) {
            out.push(b'"');
            out.extend_from_slice(t);
            out.push(b'"');
            i += t.len();
            changed = true;
            continue;
        }
        out.push(b);
        i += 1;
    }
    changed.then_some(out)
}

/// The first non-blank line of a JSON Lines file, parsed; None when the file cannot be read or
/// that line is not JSON (for the readers' `claims`, which must stay cheap and never fail).
pub(crate) fn first_line(path: &Path) -> Option<Value> {
    let mut lines = TextLines::open(path).ok()?;
    let mut buf = Vec::new();
    while lines.next_into(&mut buf).ok()?.is_some() {
        if !buf.iter().all(u8::is_ascii_whitespace) {
            return lenient_json(&buf).ok();
        }
    }
    None
}

#[cfg(test)]
mod lenient_tests {
    use super::*;

    fn lines_of(bytes: &[u8], max: usize) -> Result<Vec<(u64, String)>, ImportError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, bytes).unwrap();
        let mut lines = TextLines::open(&path)?;
        lines.max = max;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(n) = lines.next_into(&mut buf)? {
            out.push((n, String::from_utf8(buf.clone()).unwrap()));
        }
        Ok(out)
    }

    #[test]
    fn lines_end_at_lf_crlf_or_a_lone_cr_and_a_bom_is_skipped() {
        let want: Vec<(u64, String)> = vec![
            (1, "a".into()),
            (2, "b".into()),
            (3, "".into()),
            (4, "c".into()),
        ];
        for text in [
            &b"a\nb\n\nc\n"[..],
            b"a\r\nb\r\n\r\nc\r\n",
            b"a\rb\r\rc\r",
            b"\xEF\xBB\xBFa\nb\r\n\rc",
        ] {
            assert_eq!(lines_of(text, 100).unwrap(), want, "{text:?}");
        }
        let e = lines_of(b"ab\nabcdef\n", 4).unwrap_err().to_string();
        assert!(e.contains("f.jsonl:2") && e.contains("longer than"), "{e}");
        let e = lines_of(b"\xFF\xFEa\x00", 100).unwrap_err().to_string();
        assert!(e.contains("UTF-16"), "{e}");
    }

    #[test]
    fn python_float_tokens_read_as_texts_outside_strings_only() {
        let v = lenient_json(br#"{"a": NaN, "b": [Infinity, -Infinity], "c": "NaN \" Infinity"}"#)
            .unwrap();
        assert_eq!(v["a"], "NaN");
        assert_eq!(v["b"], serde_json::json!(["Infinity", "-Infinity"]));
        assert_eq!(v["c"], "NaN \" Infinity");
        assert!(lenient_json(b"{\"a\": Nope}").is_err());
        assert_eq!(lenient_json(b"[1, 2]").unwrap(), serde_json::json!([1, 2]));
    }

    /// One byte per read: every token is cut somewhere, and still becomes a text.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((&b, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buf[0] = b;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn streamed_python_floats_read_as_texts_even_cut_between_reads() {
        let text = br#"{"0": {"v": NaN, "w": [-Infinity, Infinity, -1], "s": "NaN \" -Infinity"}, "1": N}"#;
        let mut out = String::new();
        PythonFloats::new(Trickle(text))
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(
            out,
            r#"{"0": {"v": "NaN", "w": ["-Infinity", "Infinity", -1], "s": "NaN \" -Infinity"}, "1": N}"#
        );
    }
}
