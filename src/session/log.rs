//! Writing a session file: whole lines, appended in order as they happen; syncs on a thread.
//!
//! Each line is one `write` of a buffer ending in `\n`, made at once on the caller's thread,
//! to a file opened with `O_APPEND` and locked (`flock`) while a run writes it: two processes
//! never interleave lines in one session, and a killed hx has lost nothing it appended (the
//! page cache has it). A write to the page cache costs microseconds; handing each line to a
//! writer thread cost more than the write (a wake-up per line). Making the file durable is
//! what waits for the disk, so that happens on a thread of its own: at the end of each turn,
//! at most once a second (a sync asked for sooner is made within the second, so a burst of
//! quick turns costs one), and when the log closes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Syncs closer together than this are merged into one.
const SYNC_GAP: Duration = Duration::from_secs(1);

type ErrorSlot = Arc<Mutex<Option<String>>>;

/// The open log of one session.
pub struct SessionLog {
    path: PathBuf,
    file: Arc<File>,
    /// Asks the sync thread for a sync; dropped to make it sync a last time and stop.
    tx: Option<mpsc::Sender<()>>,
    /// When a sync was last asked for: asks within [`SYNC_GAP`] of it only mark `pending`,
    /// which the sync thread looks at once a second, so a burst of quick turns wakes it once.
    last_asked: Mutex<Option<Instant>>,
    pending: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The first write or sync error; later lines are dropped (memory keeps the session).
    error: ErrorSlot,
}

/// Why a session file cannot be opened for writing.
#[derive(Debug)]
pub enum OpenError {
    /// Another hx is writing this session now.
    Busy,
    Io(std::io::Error),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Busy => write!(f, "another hx is running in this session now"),
            OpenError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl SessionLog {
    /// Creates a new session file (mode 0600; it must not exist yet).
    pub fn create(path: &Path) -> Result<SessionLog, OpenError> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(OpenError::Io)?;
        lock(&file)?;
        Self::start(path, file)
    }

    /// Opens an existing session file to append to it. `valid_len` is where its last
    /// complete line ends: a torn tail after it (a crash mid-write) is cut off first, since the
    /// next line would otherwise be glued to it.
    pub fn append(path: &Path, valid_len: u64) -> Result<SessionLog, OpenError> {
        Self::append_locked(path, open_locked(path)?, valid_len)
    }

    /// [`SessionLog::append`] on a file [`open_locked`] gave, which has been read (for
    /// `valid_len`) under the same lock: no other run can have written to it in between.
    pub fn append_locked(path: &Path, file: File, valid_len: u64) -> Result<SessionLog, OpenError> {
        let len = file.metadata().map_err(OpenError::Io)?.len();
        if len > valid_len {
            file.set_len(valid_len).map_err(OpenError::Io)?;
        }
        Self::start(path, file)
    }

    /// Starts the sync thread for a locked file.
    fn start(path: &Path, file: File) -> Result<SessionLog, OpenError> {
        let file = Arc::new(file);
        let (tx, rx) = mpsc::channel::<()>();
        let error: ErrorSlot = Arc::new(Mutex::new(None));
        let pending = Arc::new(AtomicBool::new(false));
        let (thread_file, thread_error, thread_pending) =
            (file.clone(), error.clone(), pending.clone());
        let thread = std::thread::Builder::new()
            .name("hx-session-sync".into())
            .spawn(move || syncer(&thread_file, rx, &thread_pending, &thread_error))
            .map_err(OpenError::Io)?;
        Ok(SessionLog {
            path: path.to_path_buf(),
            file,
            tx: Some(tx),
            // As if asked at the start: the first second's turn ends are synced once, within it
            // (a run of quick turns pays one sync, at its end, not two).
            last_asked: Mutex::new(Some(Instant::now())),
            pending,
            thread: Some(thread),
            error,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line (given without its newline), whole, now.
    pub fn write(&self, line: &str) {
        if self.error().is_some() {
            return;
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if let Err(e) = (&*self.file).write_all(&bytes) {
            fail(&self.error, e, "write");
        }
    }

    /// Asks for the file to reach the disk (end of a turn); does not wait.
    pub fn sync(&self) {
        let Some(tx) = &self.tx else { return };
        let mut last = self.last_asked.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < SYNC_GAP) {
            self.pending.store(true, Ordering::Relaxed);
            return;
        }
        *last = Some(Instant::now());
        let _ = tx.send(());
    }

    /// The first error the writer met, if any.
    pub fn error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Writes what is queued, syncs, and waits for that; returns the first error met.
    pub fn close(mut self) -> Option<String> {
        self.finish();
        self.error()
    }

    fn finish(&mut self) {
        // Closing the channel tells the sync thread to sync a last time and stop.
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for SessionLog {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Opens an existing session file for reading and appending, under the exclusive lock. A
/// run that continues a session reads it through this handle, so what it read is what it
/// appends to.
pub fn open_locked(path: &Path) -> Result<File, OpenError> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .map_err(OpenError::Io)?;
    lock(&file)?;
    Ok(file)
}

/// An exclusive advisory lock for as long as the file is open. A listing holds a shared lock
/// for a moment ([`is_busy`]), so a taken lock is tried again for a short while before the
/// file counts as another run's.
fn lock(file: &File) -> Result<(), OpenError> {
    for attempt in 0..20 {
        // SAFETY: flock on a descriptor we own; it only takes an advisory lock.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(OpenError::Io(e));
        }
        if attempt < 19 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    Err(OpenError::Busy)
}

/// Whether another process holds the lock of a session file (a run is writing it now).
pub fn is_busy(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    // SAFETY: as in `lock`; a shared lock taken here is released when `file` closes.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// Keeps the first error.
fn fail(error: &ErrorSlot, e: std::io::Error, what: &str) {
    let mut slot = error.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        *slot = Some(format!("cannot {what} the session file: {e}"));
    }
}

/// Syncs when asked, and once a second when a sync was asked for in between (`pending`), and
/// once more when the log closes.
fn syncer(file: &File, rx: mpsc::Receiver<()>, pending: &AtomicBool, error: &ErrorSlot) {
    let sync = || {
        if let Err(e) = file.sync_data() {
            fail(error, e, "sync");
        }
    };
    loop {
        match rx.recv_timeout(SYNC_GAP) {
            Ok(()) => sync(),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if pending.swap(false, Ordering::Relaxed) {
                    sync();
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                sync();
                return;
            }
        }
    }
}
