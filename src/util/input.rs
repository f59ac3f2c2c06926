//! The one way gpassk opens a file it reads: regular files only (a FIFO would block, `/dev/zero`
//! never ends), read whole only under a size bound, or line by line with a bound on each line.

use crate::error::BadInput;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// Config, settings, prompt, manifest and other small files read whole.
pub const MAX_TEXT_FILE: u64 = 16 << 20;
/// A dataset file (or any other table) read whole: real ones are tens of MB.
pub const MAX_DATA_FILE: u64 = 512 << 20;
/// One line of a JSON Lines file: a record holds a reply of up to 16 MiB, which JSON escaping of
/// control characters can make six times longer.
pub const MAX_LINE: usize = 128 << 20;

/// Linux's `O_NONBLOCK`: opening a FIFO with it never waits for a writer; regular files ignore it.
#[cfg(target_os = "linux")]
const O_NONBLOCK: i32 = 0o4000;
#[cfg(not(target_os = "linux"))]
const O_NONBLOCK: i32 = 0;

/// A refused input as an I/O error carrying [`BadInput`], so every caller's error exits 2.
fn refused(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, BadInput(message))
}

/// Opens `path` for reading when it is a regular file (after symlinks); a directory, FIFO,
/// socket or device is refused, naming what it is.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a plain file"
    };
    Err(refused(format!("not a regular file ({what})")))
}

/// Reads a regular file whole when it holds at most `max` bytes.
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let len = file.metadata()?.len();
    let too_big = |n: u64| refused(format!("{} is larger than the {} read", size(n), size(max)));
    if len > max {
        return Err(too_big(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // The file may grow between the size check and the read: the read stops past the bound.
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_bounded_string(path: &Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read_bounded(path, max)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// A regular file read line by line, each line at most a bound; memory never grows past it.
pub struct Lines {
    reader: BufReader<File>,
    max: usize,
    line: usize,
    /// Where the next line starts in the file.
    at: u64,
    /// What a line is first read in: a longer one is measured before it is kept.
    first: u64,
}

/// A line is read directly up to this size; past it, it is first measured without being kept
/// (so a huge or endless line is refused at no cost) and then read into one allocation of its
/// size (never a buffer doubled and copied on the way).
const FIRST_READ: u64 = 1 << 20;

impl Lines {
    /// Opens `path` (see [`open_regular`]) for lines of at most `max` bytes.
    pub fn open(path: &Path, max: usize) -> std::io::Result<Lines> {
        Ok(Lines {
            reader: BufReader::with_capacity(1 << 16, open_regular(path)?),
            max,
            line: 0,
            at: 0,
            first: FIRST_READ,
        })
    }

    /// Reads the next line into `buf` (cleared first; its `\n` kept when there was one) and
    /// returns its 1-based number, or `None` at the end. A longer line is an error naming it.
    pub fn next_into(&mut self, buf: &mut Vec<u8>) -> std::io::Result<Option<usize>> {
        buf.clear();
        self.append_next(buf)
    }

    /// [`Lines::next_into`] without clearing `buf`: the line is appended after what it holds.
    pub fn append_next(&mut self, buf: &mut Vec<u8>) -> std::io::Result<Option<usize>> {
        let limit = self.max as u64 + 1;
        let first = limit.min(self.first);
        let n = (&mut self.reader).take(first).read_until(b'\n', buf)? as u64;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        let mut len = n;
        if n == first && buf.last() != Some(&b'\n') {
            let (rest, ended) = self.measure(limit - n)?;
            len += rest;
            if len == limit && !ended {
                return Err(refused(format!(
                    "line {} is longer than {}",
                    self.line,
                    size(self.max as u64)
                )));
            }
            self.reader.seek(SeekFrom::Start(self.at + n))?;
            let kept = buf.len();
            buf.try_reserve_exact(rest as usize)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, e))?;
            buf.resize(kept + rest as usize, 0);
            self.reader.read_exact(&mut buf[kept..])?;
        }
        self.at += len;
        Ok(Some(self.line))
    }

    /// Consumes at most `room` bytes up to and including the next `\n`, keeping none: how many,
    /// and whether the `\n` was among them.
    fn measure(&mut self, room: u64) -> std::io::Result<(u64, bool)> {
        let mut used = 0;
        while used < room {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                return Ok((used, false));
            }
            let window = &chunk[..chunk.len().min((room - used) as usize)];
            let (take, ended) = match memchr::memchr(b'\n', window) {
                Some(i) => (i + 1, true),
                None => (window.len(), false),
            };
            self.reader.consume(take);
            used += take as u64;
            if ended {
                return Ok((used, true));
            }
        }
        Ok((used, false))
    }
}

/// Bytes in the unit that reads best: `16 MiB`, `2.0 GiB`, `300 bytes`.
fn size(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / f64::from(1u32 << 30)),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1u32 << 20)),
        n => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_regular_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_bounded(dir.path(), 10).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = read_bounded(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let e = Lines::open(&fifo, 10).err().unwrap();
        assert!(e.to_string().contains("a FIFO"), "{e}");
    }

    #[test]
    fn sizes_and_lines_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "ab\ncdefgh\nij").unwrap();
        assert_eq!(read_bounded(&path, 12).unwrap().len(), 12);
        let e = read_bounded(&path, 11).unwrap_err();
        assert_eq!(e.to_string(), "12 bytes is larger than the 11 bytes read");
        let mut lines = Lines::open(&path, 3).unwrap();
        let mut buf = Vec::new();
        assert_eq!(lines.next_into(&mut buf).unwrap(), Some(1));
        assert_eq!(buf, b"ab\n");
        let e = lines.next_into(&mut buf).unwrap_err();
        assert_eq!(e.to_string(), "line 2 is longer than 3 bytes");
        let mut lines = Lines::open(&path, 6).unwrap();
        let mut got = Vec::new();
        while let Some(n) = lines.next_into(&mut buf).unwrap() {
            got.push((n, String::from_utf8(buf.clone()).unwrap()));
        }
        assert_eq!(
            got,
            [(1, "ab\n".into()), (2, "cdefgh\n".into()), (3, "ij".into())]
        );
        // Appending keeps what the buffer held and bounds the new line alone.
        let mut lines = Lines::open(&path, 6).unwrap();
        let mut buf = b"held".to_vec();
        assert_eq!(lines.append_next(&mut buf).unwrap(), Some(1));
        assert_eq!(lines.append_next(&mut buf).unwrap(), Some(2));
        assert_eq!(buf, b"heldab\ncdefgh\n");
        let mut lines = Lines::open(&path, 3).unwrap();
        lines.append_next(&mut buf).unwrap();
        let e = lines.append_next(&mut buf).unwrap_err();
        assert_eq!(e.to_string(), "line 2 is longer than 3 bytes");
        assert_eq!(size(2 << 30), "2.0 GiB");
        assert_eq!(size(16 << 20), "16 MiB");
    }

    #[test]
    fn a_long_line_is_measured_before_it_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "abcdefghij\nk\nlmnopqrstuvwxyz").unwrap();
        // Lines past the first read (4 bytes here) are measured, then read in one allocation.
        let mut lines = Lines::open(&path, 12).unwrap();
        lines.first = 4;
        let mut buf = b"held".to_vec();
        assert_eq!(lines.append_next(&mut buf).unwrap(), Some(1));
        assert_eq!(buf, b"heldabcdefghij\n");
        assert_eq!(lines.next_into(&mut buf).unwrap(), Some(2));
        assert_eq!(buf, b"k\n");
        let e = lines.next_into(&mut buf).unwrap_err();
        assert_eq!(e.to_string(), "line 3 is longer than 12 bytes");
        // The same bounds as a direct read: a line of exactly `max` bytes and its newline pass.
        let mut lines = Lines::open(&path, 10).unwrap();
        lines.first = 4;
        assert_eq!(lines.next_into(&mut buf).unwrap(), Some(1));
        assert_eq!(buf, b"abcdefghij\n");
        let mut lines = Lines::open(&path, 9).unwrap();
        lines.first = 4;
        let e = lines.next_into(&mut buf).unwrap_err();
        assert_eq!(e.to_string(), "line 1 is longer than 9 bytes");
    }

    #[test]
    fn a_2_gib_line_is_refused_without_growing_the_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zeros");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(2 << 30)
            .unwrap();
        let mut lines = Lines::open(&path, MAX_LINE).unwrap();
        let mut buf = Vec::new();
        let e = lines.next_into(&mut buf).unwrap_err();
        assert_eq!(e.to_string(), "line 1 is longer than 128 MiB");
        assert!(buf.capacity() <= 2 << 20, "{} bytes held", buf.capacity());
        // A long line that fits is kept in one allocation of its size.
        let long = dir.path().join("long");
        let mut text = vec![b'x'; 5 << 20];
        text.push(b'\n');
        std::fs::write(&long, &text).unwrap();
        let mut lines = Lines::open(&long, MAX_LINE).unwrap();
        let mut buf = Vec::new();
        assert_eq!(lines.next_into(&mut buf).unwrap(), Some(1));
        assert_eq!(buf, text);
        assert!(
            buf.capacity() < text.len() + (1 << 20),
            "{}",
            buf.capacity()
        );
    }
}
