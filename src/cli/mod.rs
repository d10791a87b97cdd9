//! Subcommands of the `jevgate` binary: one file per command family, thin over the library.

pub mod browser;
pub mod config;
pub mod device;
pub mod evaluate;
pub mod grammar;
pub mod jev;
pub mod mcp;
pub mod task;

use std::io::{BufRead, Read};

/// A usage error: printed with the help text, exit code 2.
pub struct Usage(pub String);

/// Reads a file, or stdin for `-`, bounded to the configuration size limit (+1 to detect excess).
pub fn read_input(source: &str) -> Result<Vec<u8>, Usage> {
    let limit = jevgate::config::MAX_CONFIG_BYTES as u64 + 1;
    let mut buf = Vec::new();
    let result = if source == "-" {
        std::io::stdin().take(limit).read_to_end(&mut buf)
    } else {
        std::fs::File::open(source).and_then(|f| f.take(limit).read_to_end(&mut buf))
    };
    result.map_err(|e| {
        Usage(format!(
            "cannot read {}: {}",
            source.escape_debug(),
            e.kind()
        ))
    })?;
    Ok(buf)
}

/// A fresh private (0700) directory `<temp>/<prefix>-p<pid>-t<start>-<random>` for a command's
/// data, removed by the command when it ends; the ones left by killed processes are swept first
/// (issue 20 item 4).
pub fn temp_data_dir(prefix: &str) -> jevgate::Result<std::path::PathBuf> {
    jevgate::unstable::private_temp_dir(prefix)
}

pub fn error_line(err: &jevgate::Error) -> String {
    serde_json::json!({
        "code": err.code(),
        "path": err.path(),
        "message": err.to_string(),
    })
    .to_string()
}

/// Why one JSONL input line could not be read as text. The line's content is never echoed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadLine {
    /// The line is not UTF-8.
    NotUtf8,
    /// The line is longer than the limit (it was skipped without being kept in memory).
    TooLong,
}

impl BadLine {
    /// The message of the line's error object.
    pub fn message(self, limit: usize) -> String {
        match self {
            BadLine::NotUtf8 => "the line is not valid UTF-8".into(),
            BadLine::TooLong => format!("the line is longer than {limit} bytes"),
        }
    }
}

/// The lines of a JSONL stream, each bounded to `limit` bytes: one bad line (not UTF-8, too
/// long) is that line's error and the stream goes on; only a failed read ends it. Line numbers
/// count from 1; a trailing `\r` is dropped as `BufRead::lines` does.
pub struct JsonlLines<R> {
    reader: R,
    limit: usize,
    number: u64,
}

impl<R: BufRead> JsonlLines<R> {
    /// Lines of `reader`, at most `limit` bytes each.
    pub fn new(reader: R, limit: usize) -> Self {
        JsonlLines {
            reader,
            limit,
            number: 0,
        }
    }

    /// The next line: `None` at the end, `Err` when reading failed.
    #[allow(clippy::type_complexity)]
    pub fn next_line(&mut self) -> std::io::Result<Option<(u64, Result<String, BadLine>)>> {
        let mut buf = Vec::new();
        let mut too_long = false;
        let mut any = false;
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if !too_long {
                if buf.len() + take > self.limit + 1 {
                    too_long = true;
                    buf = Vec::new();
                } else {
                    buf.extend_from_slice(&chunk[..take]);
                }
            }
            self.reader.consume(if done { take + 1 } else { take });
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        let line = if too_long || buf.len() > self.limit {
            Err(BadLine::TooLong)
        } else {
            String::from_utf8(buf).map_err(|_| BadLine::NotUtf8)
        };
        Ok(Some((self.number, line)))
    }
}
