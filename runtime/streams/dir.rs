//! The download directory: private to this user, free of crash leftovers, and shared safely
//! with other server processes.
//!
//! - At start-up (and before each download) the directory is created 0700 when absent and
//!   refused unless it is a real directory (not a symlink) owned by this user with no group or
//!   other access, so another local user cannot pre-create or watch it.
//! - Downloads are written to `<name>.part` and renamed when complete; `.part` files left by a
//!   crash are removed at start-up, so they never count against the quota. A `.part` file a
//!   live server sharing the directory is writing is locked by it and kept.
//! - The quota is kept by [`DirQuota`]: each chunk is reserved and written while holding an
//!   exclusive lock on `.snowluma-mcp.lock` in the directory, and the reservation is checked
//!   against the bytes the directory holds at that moment (completed files plus every live
//!   `.part` file, this process's and others'). The lock serialises writers in this process and
//!   in every other server sharing the directory, so two concurrent downloads cannot together
//!   pass SNOWLUMA_MCP_DIR_QUOTA_BYTES, and no in-memory counter can drift or survive a crash.
//!
//! Owner and mode checks are POSIX-only (`cfg(unix)`); elsewhere the symlink and kind checks
//! apply and the directory should live under the user's profile, whose ACL excludes others.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;

/// Suffix of a download still being written.
pub const PART_SUFFIX: &str = ".part";
/// The lock file that serialises quota reservations across processes.
pub const LOCK_FILE: &str = ".snowluma-mcp.lock";

/// Creates `dir` when absent (0700), checks it is private to this user, and removes `.part`
/// files a crashed run left behind. Returns how many leftovers were removed.
///
/// A `.part` file another live server (sharing the directory) is still writing is kept: its
/// writer holds an exclusive lock on it for as long as it writes (see [`create_part`]), and
/// the lock vanishes with the process, so a file whose lock can be taken is a crash leftover.
/// The scan runs under the directory lock, which [`create_part`] also holds between creating
/// and locking a file, so a file is never seen in that gap.
pub fn prepare_download_dir(dir: &Path) -> Result<usize, String> {
    ensure_private_dir(dir)?;
    let scan = || -> Result<usize, String> {
        let mut removed = 0;
        let entries =
            fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let is_part = name.to_string_lossy().ends_with(PART_SUFFIX);
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            if !(is_part && is_file) {
                continue;
            }
            let abandoned = match File::open(entry.path()) {
                // Held while removing, so no writer can adopt it meanwhile.
                Ok(file) => match file.try_lock_exclusive() {
                    Ok(true) => Some(file),
                    _ => continue, // a live writer holds it
                },
                Err(_) => None,
            };
            if fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
            drop(abandoned);
        }
        Ok(removed)
    };
    with_dir_lock(dir, scan)
        .map_err(|e| format!("cannot lock {}: {e}", dir.join(LOCK_FILE).display()))?
}

/// Runs `work` holding the exclusive directory lock (`.snowluma-mcp.lock`). Blocking.
fn with_dir_lock<T>(dir: &Path, work: impl FnOnce() -> T) -> std::io::Result<T> {
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_FILE))?;
    lock.lock_exclusive()?;
    let result = work();
    let _ = FileExt::unlock(&lock);
    Ok(result)
}

/// Creates `path` (a new `.part` file, 0600, never replacing one) and locks it exclusively for
/// as long as the returned handle lives, both under the directory lock, so the start-up
/// clean-up of another server sharing the directory never removes it. Blocking.
pub fn create_part(dir: &Path, path: &Path) -> std::io::Result<File> {
    with_dir_lock(dir, || {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(path)?;
        if let Err(error) = file.lock_exclusive() {
            let _ = fs::remove_file(path);
            return Err(error);
        }
        Ok(file)
    })?
}

/// Creates `dir` (0700) when absent, then refuses it unless it is private to this user.
pub fn ensure_private_dir(dir: &Path) -> Result<(), String> {
    if fs::symlink_metadata(dir).is_err() {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let meta =
        fs::symlink_metadata(dir).map_err(|e| format!("cannot inspect {}: {e}", dir.display()))?;
    let shown = dir.display();
    if meta.file_type().is_symlink() {
        return Err(format!(
            "{shown} is a symlink; point SNOWLUMA_MCP_DOWNLOAD_DIR at a real directory"
        ));
    }
    if !meta.is_dir() {
        return Err(format!(
            "{shown} is not a directory; remove it or point SNOWLUMA_MCP_DOWNLOAD_DIR elsewhere"
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let user = rustix::process::geteuid().as_raw();
        if meta.uid() != user {
            return Err(format!(
                "{shown} is owned by uid {}, not by this server's uid {user}; use a directory \
                 owned by the user running snowluma-mcp (SNOWLUMA_MCP_DOWNLOAD_DIR)",
                meta.uid()
            ));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "{shown} has permissions {:o}, which let group or others in; run chmod 700 on it",
                meta.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// Why a quota-checked write did not happen.
pub enum QuotaRefusal {
    /// The directory would pass the quota; `used` is what it holds now.
    Exceeded {
        used: u64,
    },
    Io(std::io::Error),
}

/// The quota accountant of one download directory (see the module comment).
#[derive(Clone, Debug)]
pub struct DirQuota {
    dir: PathBuf,
    quota: u64,
}

impl DirQuota {
    pub fn new(dir: PathBuf, quota: u64) -> Self {
        DirQuota { dir, quota }
    }

    /// Reserves `bytes` and writes them to `file` as one step under the directory lock.
    /// Blocking: call it off the async runtime.
    pub fn write_within(&self, file: &mut File, bytes: &[u8]) -> Result<(), QuotaRefusal> {
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(LOCK_FILE))
            .map_err(QuotaRefusal::Io)?;
        lock.lock_exclusive().map_err(QuotaRefusal::Io)?;
        let used = usage(&self.dir);
        let result = if used.saturating_add(bytes.len() as u64) > self.quota {
            Err(QuotaRefusal::Exceeded { used })
        } else {
            file.write_all(bytes).map_err(QuotaRefusal::Io)
        };
        // Closing the handle releases the lock; unlock explicitly for clarity.
        let _ = FileExt::unlock(&lock);
        result
    }
}

/// Bytes held by regular files directly in `dir`: completed downloads and live `.part` files.
pub fn usage(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_name() != LOCK_FILE)
        .filter_map(|entry| entry.metadata().ok())
        .filter(|meta| meta.is_file())
        .map(|meta| meta.len())
        .sum()
}
