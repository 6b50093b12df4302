//! Incremental chunked-body state machine (RFC 9112 7.1). Strict on purpose: a lenient
//! chunk parser in front of a strict one is the classic request-smuggling setup.
//! Bytes may arrive split anywhere, even inside a size line or a CRLF.

use crate::fields::is_tchar;
use crate::framing::MAX_BODY_LENGTH;

/// Longest chunk-size line (digits, whitespace and extensions) accepted, in bytes.
pub const MAX_SIZE_LINE: usize = 4096;
/// Largest trailer section accepted, in bytes.
pub const MAX_TRAILER_SECTION: usize = 16 * 1024;

/// Why a chunked body was refused. Once returned, every later call returns it again.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ChunkError {
    /// Chunk-size line without a hex digit, or with a byte not allowed there.
    #[error("invalid chunk size line: {0}")]
    InvalidSize(&'static str),
    /// Chunk size above [`crate::MAX_BODY_LENGTH`].
    #[error("chunk size too large")]
    SizeTooLarge,
    /// Chunk-size line longer than [`MAX_SIZE_LINE`].
    #[error("chunk size line too long")]
    SizeLineTooLong,
    /// A control byte (bare LF included) inside a chunk extension.
    #[error("invalid chunk extension")]
    InvalidExtension,
    /// CR not followed by LF, or chunk data not followed by CRLF.
    #[error("missing CRLF {0}")]
    MissingCrlf(&'static str),
    /// Malformed trailer field line.
    #[error("invalid trailer field")]
    InvalidTrailer,
    /// Trailer section longer than [`MAX_TRAILER_SECTION`].
    #[error("trailer section too large")]
    TrailerTooLarge,
}

/// What one [`ChunkedDecoder::scan`] or [`ChunkedDecoder::decode`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkProgress {
    /// Bytes of the input that belong to this message; less than the input only when
    /// `done` (the rest is the next message on the connection).
    pub consumed: usize,
    /// The message ended (final CRLF after the last chunk and trailers consumed).
    pub done: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum State {
    /// Start of a size line: a hex digit must come.
    #[default]
    SizeStart,
    /// Inside the hex digits.
    Size,
    /// BWS after the digits, before `;` (RFC 9112 7.1.1).
    SizeWs,
    /// Inside chunk extensions, up to the CR.
    Extension,
    /// CR of the size line seen.
    SizeLf,
    /// Chunk payload; `remaining` bytes left.
    Data,
    /// Payload complete: CR must come.
    DataCr,
    /// CR after payload seen.
    DataLf,
    /// Start of a trailer line, or of the final CRLF.
    TrailerStart,
    /// Inside a trailer field name.
    TrailerName,
    /// Inside a trailer field value.
    TrailerValue,
    /// CR at the end of a trailer field line seen.
    TrailerLf,
    /// CR of the final empty line seen.
    EndLf,
    Done,
    Failed(ChunkError),
}

/// Incremental chunked-body parser: [`scan`](Self::scan) to pass raw bytes through,
/// [`decode`](Self::decode) to strip the framing. One decoder per message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkedDecoder {
    state: State,
    /// Chunk size being read, then payload bytes still due.
    remaining: u64,
    /// Bytes of the current size line.
    line_len: usize,
    /// Bytes of the trailer section so far.
    trailer_len: usize,
}

impl ChunkedDecoder {
    /// A decoder at the start of a chunked body.
    pub fn new() -> Self {
        Self::default()
    }

    /// Has the final CRLF been consumed?
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Pass-through mode: how many bytes of `data` belong to this message and whether
    /// the message ended.
    pub fn scan(&mut self, data: &[u8]) -> Result<ChunkProgress, ChunkError> {
        self.run(data, None)
    }

    /// De-chunk mode: like [`scan`](Self::scan), appending payload bytes to `out`.
    pub fn decode(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<ChunkProgress, ChunkError> {
        self.run(data, Some(out))
    }

    fn run(
        &mut self,
        data: &[u8],
        mut out: Option<&mut Vec<u8>>,
    ) -> Result<ChunkProgress, ChunkError> {
        let mut pos = 0;
        while pos < data.len() {
            match self.state {
                State::Done => break,
                State::Failed(ref e) => return Err(e.clone()),
                State::Data => {
                    let rest = data.get(pos..).unwrap_or_default();
                    let n =
                        usize::try_from(self.remaining).map_or(rest.len(), |r| r.min(rest.len()));
                    let payload = rest.get(..n).unwrap_or_default();
                    if let Some(out) = out.as_deref_mut() {
                        out.extend_from_slice(payload);
                    }
                    // n <= remaining, so this cannot underflow.
                    self.remaining -= n as u64;
                    if self.remaining == 0 {
                        self.state = State::DataCr;
                    }
                    pos += n;
                }
                _ => {
                    let b = data.get(pos).copied().unwrap_or_default();
                    pos += 1;
                    if let Err(e) = self.step(b) {
                        self.state = State::Failed(e.clone());
                        return Err(e);
                    }
                }
            }
        }
        if let State::Failed(ref e) = self.state {
            return Err(e.clone());
        }
        let done = self.is_done();
        Ok(ChunkProgress {
            consumed: pos,
            done,
        })
    }

    /// One byte of framing (everything but payload).
    fn step(&mut self, b: u8) -> Result<(), ChunkError> {
        match self.state {
            State::SizeStart => {
                let digit = hex(b).ok_or(ChunkError::InvalidSize("expected a hex digit"))?;
                self.remaining = u64::from(digit);
                self.line_len = 1;
                self.state = State::Size;
            }
            State::Size => {
                self.count_line()?;
                if let Some(digit) = hex(b) {
                    self.remaining = self
                        .remaining
                        .checked_mul(16)
                        .and_then(|n| n.checked_add(u64::from(digit)))
                        .filter(|n| *n <= MAX_BODY_LENGTH)
                        .ok_or(ChunkError::SizeTooLarge)?;
                } else {
                    self.state = match b {
                        b';' => State::Extension,
                        b' ' | b'\t' => State::SizeWs,
                        b'\r' => State::SizeLf,
                        _ => return Err(ChunkError::InvalidSize("unexpected byte after size")),
                    };
                }
            }
            State::SizeWs => {
                self.count_line()?;
                self.state = match b {
                    b' ' | b'\t' => State::SizeWs,
                    b';' => State::Extension,
                    _ => return Err(ChunkError::InvalidSize("whitespace not before ';'")),
                };
            }
            State::Extension => {
                self.count_line()?;
                match b {
                    b'\r' => self.state = State::SizeLf,
                    b'\t' | b' '..=b'~' | 0x80..=0xff => {}
                    _ => return Err(ChunkError::InvalidExtension),
                }
            }
            State::SizeLf => {
                expect_lf(b, "after chunk size")?;
                self.state = if self.remaining == 0 {
                    State::TrailerStart
                } else {
                    State::Data
                };
            }
            State::DataCr => {
                if b != b'\r' {
                    return Err(ChunkError::MissingCrlf("after chunk data"));
                }
                self.state = State::DataLf;
            }
            State::DataLf => {
                expect_lf(b, "after chunk data")?;
                self.state = State::SizeStart;
            }
            State::TrailerStart => {
                self.count_trailer()?;
                self.state = match b {
                    b'\r' => State::EndLf,
                    _ if is_tchar(b) => State::TrailerName,
                    _ => return Err(ChunkError::InvalidTrailer),
                };
            }
            State::TrailerName => {
                self.count_trailer()?;
                match b {
                    b':' => self.state = State::TrailerValue,
                    _ if is_tchar(b) => {}
                    _ => return Err(ChunkError::InvalidTrailer),
                }
            }
            State::TrailerValue => {
                self.count_trailer()?;
                match b {
                    b'\r' => self.state = State::TrailerLf,
                    b'\t' | b' '..=b'~' | 0x80..=0xff => {}
                    _ => return Err(ChunkError::InvalidTrailer),
                }
            }
            State::TrailerLf => {
                self.count_trailer()?;
                expect_lf(b, "after trailer field")?;
                self.state = State::TrailerStart;
            }
            State::EndLf => {
                expect_lf(b, "ending the chunked body")?;
                self.state = State::Done;
            }
            // `run` handles these without calling `step`.
            State::Data | State::Done | State::Failed(_) => {}
        }
        Ok(())
    }

    fn count_line(&mut self) -> Result<(), ChunkError> {
        bump(
            &mut self.line_len,
            MAX_SIZE_LINE,
            ChunkError::SizeLineTooLong,
        )
    }

    fn count_trailer(&mut self) -> Result<(), ChunkError> {
        bump(
            &mut self.trailer_len,
            MAX_TRAILER_SECTION,
            ChunkError::TrailerTooLarge,
        )
    }
}

fn bump(counter: &mut usize, max: usize, err: ChunkError) -> Result<(), ChunkError> {
    *counter = counter.saturating_add(1);
    if *counter > max {
        return Err(err);
    }
    Ok(())
}

fn expect_lf(b: u8, context: &'static str) -> Result<(), ChunkError> {
    if b == b'\n' {
        Ok(())
    } else {
        Err(ChunkError::MissingCrlf(context))
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
#[path = "chunked_tests.rs"]
mod tests;
