//! Output files that are complete or absent: `-o FILE` is written under a temporary name in the
//! same directory and renamed over `FILE` only once everything was written and flushed.
//!
//! An error drops the [`AtomicFile`] (which removes the temporary file); SIGINT, SIGTERM and
//! SIGHUP remove every temporary file still open before the process exits (exit status 128 +
//! the signal's number, as a shell reports it). A process killed outright (SIGKILL) can leave a
//! `.NAME.*.partial` file behind, never a half-written `NAME`.
//!
//! Only regular files (or names that do not exist yet) are replaced that way: a device, a FIFO
//! or a terminal (`-o /dev/null`, `-o /dev/stdout`) is written in place, as `File::create`
//! would, and a symbolic link is followed, so that the file it names is replaced, not the link.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, PoisonError};

use tempfile::NamedTempFile;

/// Temporary files not yet renamed, for the signal handler.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static CLEANUP: Once = Once::new();

/// A file written under a temporary name and renamed to its final one by [`AtomicFile::commit`].
#[derive(Debug)]
pub struct AtomicFile {
    out: Out,
    dest: PathBuf,
}

#[derive(Debug)]
enum Out {
    /// A regular file's temporary stand-in, until renamed.
    Temp(NamedTempFile),
    /// A device, FIFO or terminal, written in place.
    Direct(File),
    /// Committed.
    Done,
}

impl AtomicFile {
    /// Starts writing `dest`: creates `.NAME.XXXXXX.partial` beside it (beside the file a
    /// symbolic link names), or opens a device or FIFO for writing in place.
    ///
    /// # Errors
    /// The directory does not exist or is not writable.
    pub fn create(dest: &Path) -> io::Result<AtomicFile> {
        // `metadata` follows symbolic links: what matters is what is written to.
        if let Ok(meta) = fs::metadata(dest)
            && !meta.is_file()
        {
            let file = OpenOptions::new().write(true).truncate(true).open(dest)?;
            return Ok(AtomicFile {
                out: Out::Direct(file),
                dest: dest.to_owned(),
            });
        }
        CLEANUP.call_once(remove_pending_on_signal);
        let target = match fs::symlink_metadata(dest) {
            Ok(m) if m.file_type().is_symlink() => fs::canonicalize(dest)?,
            _ => dest.to_owned(),
        };
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map_or_else(|| "output".to_owned(), |n| n.to_string_lossy().into_owned());
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".partial")
            // 0o666 less the umask, as `File::create` gives (tempfile's default is 0o600).
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(dir)?;
        lock().push(tmp.path().to_owned());
        Ok(AtomicFile {
            out: Out::Temp(tmp),
            dest: target,
        })
    }

    /// Flushes, syncs and renames the file to its final name (a device or FIFO: flushes).
    /// Writing afterwards fails.
    ///
    /// # Errors
    /// The flush, the sync or the rename fails (the temporary file is removed).
    pub fn commit(&mut self) -> io::Result<()> {
        let mut tmp = match std::mem::replace(&mut self.out, Out::Done) {
            Out::Temp(tmp) => tmp,
            Out::Direct(mut file) => return file.flush(),
            Out::Done => return Err(already_committed()),
        };
        let tmp_path = tmp.path().to_owned();
        let result = tmp
            .flush()
            .and_then(|()| tmp.as_file().sync_data())
            .and_then(|()| {
                // Held across the rename, so a signal cannot remove the file mid-way.
                let mut pending = lock();
                pending.retain(|p| p != &tmp_path);
                tmp.persist(&self.dest).map(drop).map_err(|e| e.error)
            });
        // On failure `tmp` (or the error's file) was dropped, which removed it.
        lock().retain(|p| p != &tmp_path);
        result
    }

    fn writer(&mut self) -> io::Result<&mut dyn Write> {
        match &mut self.out {
            Out::Temp(t) => Ok(t),
            Out::Direct(f) => Ok(f),
            Out::Done => Err(already_committed()),
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer()?.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer()?.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Out::Done => Ok(()),
            _ => self.writer()?.flush(),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Out::Temp(tmp) = std::mem::replace(&mut self.out, Out::Done) {
            let path = tmp.path().to_owned();
            drop(tmp); // removes the file
            lock().retain(|p| p != &path);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A panic while holding the list leaves it usable: it is only a list of paths.
    PENDING.lock().unwrap_or_else(PoisonError::into_inner)
}

fn already_committed() -> io::Error {
    io::Error::other("output already complete")
}

/// A thread that waits for SIGINT, SIGTERM or SIGHUP, removes the pending temporary files and
/// exits as the signal would have.
fn remove_pending_on_signal() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    // Without the handler (no thread, no signal pipe) outputs are still renamed only when
    // complete; an interrupted run then leaves its `.partial` file.
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let spawned = std::thread::Builder::new()
        .name("outfile-cleanup".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let pending = lock();
                for p in pending.iter() {
                    let _ = fs::remove_file(p);
                }
                std::process::exit(128 + sig);
            }
        });
    drop(spawned);
}
