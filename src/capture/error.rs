//! Why a capture cannot be read: [`CaptureError`], one line naming the file and the reason;
//! and the readers' step error, which gets the path only when it is reported.

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};

use pcap_file::PcapError;

/// Why a capture could not be read. `Display` is one line: `<file>: <reason>`.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Opening or reading failed.
    #[error("{}: {}", .path.display(), io_reason(.error))]
    Io { path: PathBuf, error: io::Error },
    /// The path names a directory.
    #[error("{}: is a directory", .path.display())]
    IsDirectory { path: PathBuf },
    /// The input has no bytes at all.
    #[error("{}: empty file", .path.display())]
    Empty { path: PathBuf },
    /// The first four bytes are no pcap or pcapng magic number.
    #[error("{}: not a pcap or pcapng file (magic 0x{magic:08x})", .path.display())]
    NotCapture { path: PathBuf, magic: u32 },
    /// Fewer than four bytes: no magic number to look at.
    #[error("{}: not a pcap or pcapng file (only {len} bytes)", .path.display())]
    TooShort { path: PathBuf, len: usize },
    /// The pcap global header or the first pcapng section header is cut short.
    #[error("{}: truncated {what} ({need} bytes needed, {have} present)", .path.display())]
    TruncatedHeader {
        path: PathBuf,
        what: &'static str,
        need: usize,
        have: usize,
    },
    /// The input ends inside the fixed header of a record or block.
    #[error("{}: truncated {what} header at byte {offset} (need {need} bytes, {left} left)", .path.display())]
    TruncatedRecordHeader {
        path: PathBuf,
        what: &'static str,
        offset: u64,
        need: usize,
        left: usize,
    },
    /// A record or block says it is longer than what is left of the input.
    #[error("{}: truncated {what} at byte {offset} ({what} says {says} bytes, {left} left)", .path.display())]
    TruncatedRecord {
        path: PathBuf,
        what: &'static str,
        offset: u64,
        says: u64,
        left: u64,
    },
    /// The file became shorter while it was being read (truncated or rotated under the reader).
    #[error("{}: the file shrank while being read ({was} bytes when opened, {now} now)", .path.display())]
    Shrunk { path: PathBuf, was: u64, now: u64 },
    /// A record or block whose content makes no sense.
    #[error("{}: malformed {what} at byte {offset}: {reason}", .path.display())]
    Malformed {
        path: PathBuf,
        what: &'static str,
        offset: u64,
        reason: Cow<'static, str>,
    },
}

impl CaptureError {
    /// The file the error is about (`<stdin>` for standard input).
    #[must_use]
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. }
            | Self::IsDirectory { path }
            | Self::Shrunk { path, .. }
            | Self::Empty { path }
            | Self::NotCapture { path, .. }
            | Self::TooShort { path, .. }
            | Self::TruncatedHeader { path, .. }
            | Self::TruncatedRecordHeader { path, .. }
            | Self::TruncatedRecord { path, .. }
            | Self::Malformed { path, .. } => path,
        }
    }
}

/// `io::Error`'s message without the ` (os error N)` suffix.
fn io_reason(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_owned(),
        _ => text,
    }
}

pub(super) fn pcap_error_reason(error: PcapError) -> Cow<'static, str> {
    match error {
        PcapError::InvalidField(reason) => Cow::Borrowed(reason),
        PcapError::IncompleteBuffer => Cow::Borrowed("incomplete data"),
        other => Cow::Owned(other.to_string()),
    }
}

pub(super) fn io_err(path: &Path, error: io::Error) -> CaptureError {
    CaptureError::Io {
        path: path.to_owned(),
        error,
    }
}

/// A [`CaptureError`] before the path is attached (keeps the hot path free of `PathBuf` moves).
pub(super) enum StepError {
    Io(io::Error),
    RecordHeader {
        what: &'static str,
        offset: u64,
        need: usize,
        left: usize,
    },
    Record {
        what: &'static str,
        offset: u64,
        says: u64,
        left: u64,
    },
    Malformed {
        what: &'static str,
        offset: u64,
        reason: Cow<'static, str>,
    },
}

impl StepError {
    pub(super) fn into_error(self, path: PathBuf) -> CaptureError {
        match self {
            StepError::Io(error) => CaptureError::Io { path, error },
            StepError::RecordHeader {
                what,
                offset,
                need,
                left,
            } => CaptureError::TruncatedRecordHeader {
                path,
                what,
                offset,
                need,
                left,
            },
            StepError::Record {
                what,
                offset,
                says,
                left,
            } => CaptureError::TruncatedRecord {
                path,
                what,
                offset,
                says,
                left,
            },
            StepError::Malformed {
                what,
                offset,
                reason,
            } => CaptureError::Malformed {
                path,
                what,
                offset,
                reason,
            },
        }
    }
}

impl From<io::Error> for StepError {
    fn from(e: io::Error) -> Self {
        StepError::Io(e)
    }
}
