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
//!   against the bytes the directory holds (completed files plus every live `.part` file, this
//!   process's and others'), a figure kept in the lock file by every writer. The lock
//!   serialises writers in this process and in every other server sharing the directory, so two
//!   concurrent downloads cannot together pass SNOWLUMA_MCP_DIR_QUOTA_BYTES. The figure is
//!   counted afresh at start-up and before any refusal, so a crash or a file removed by hand
//!   never leaves it wrong for long; a directory that cannot be listed refuses the write.
//!
//! Owner and mode checks are POSIX-only (`cfg(unix)`); elsewhere the symlink and kind checks
//! apply and the directory should live under the user's profile, whose ACL excludes others.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
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
        recount(dir).map_err(|e| format!("cannot count the files in {}: {e}", dir.display()))?;
        Ok(removed)
    };
    with_dir_lock(dir, scan)
        .map_err(|e| format!("cannot lock {}: {e}", dir.join(LOCK_FILE).display()))?
}

/// Runs `work` holding the exclusive directory lock (`.snowluma-mcp.lock`). Blocking.
fn with_dir_lock<T>(dir: &Path, work: impl FnOnce() -> T) -> std::io::Result<T> {
    let lock = open_lock(dir)?;
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
    /// The directory could not be listed to count what it holds: refused, never guessed.
    Unreadable(std::io::Error),
    Io(std::io::Error),
}

/// The quota accountant of one download (see the module comment).
///
/// The bytes the directory holds are a figure kept in the lock file itself, read and updated
/// under the lock by every writer in this process and in every other server sharing the
/// directory, so a chunk costs a few bytes of I/O instead of a directory listing. The figure
/// is counted afresh from the directory at start-up ([`prepare_download_dir`]), when it is
/// missing or unreadable, and before a refusal: files removed by hand (as the quota error
/// tells people to do) or a crashed writer's `.part` file make it too high, never too low for
/// this server's own writes.
pub struct DirQuota {
    dir: PathBuf,
    quota: u64,
    /// The lock file, opened at the first write and kept for the download.
    lock: Option<File>,
}

impl DirQuota {
    pub fn new(dir: PathBuf, quota: u64) -> Self {
        DirQuota {
            dir,
            quota,
            lock: None,
        }
    }

    /// Reserves `bytes` and writes them to `file` as one step under the directory lock.
    /// Blocking: call it off the async runtime.
    pub fn write_within(&mut self, file: &mut File, bytes: &[u8]) -> Result<(), QuotaRefusal> {
        if self.lock.is_none() {
            self.lock = Some(open_lock(&self.dir).map_err(QuotaRefusal::Io)?);
        }
        let Some(lock) = self.lock.as_mut() else {
            return Err(QuotaRefusal::Io(std::io::Error::other("no lock file")));
        };
        lock.lock_exclusive().map_err(QuotaRefusal::Io)?;
        let result = reserve_and_write(&self.dir, lock, self.quota, file, bytes);
        let _ = FileExt::unlock(&*lock);
        result
    }
}

/// The body of [`DirQuota::write_within`], run holding the lock.
fn reserve_and_write(
    dir: &Path,
    lock: &mut File,
    quota: u64,
    file: &mut File,
    bytes: &[u8],
) -> Result<(), QuotaRefusal> {
    let wanted = bytes.len() as u64;
    let mut used = match read_figure(lock) {
        Some(used) => used,
        None => usage(dir).map_err(QuotaRefusal::Unreadable)?,
    };
    if used.saturating_add(wanted) > quota {
        // The figure may be stale-high: count what is really there before refusing.
        used = usage(dir).map_err(QuotaRefusal::Unreadable)?;
        if used.saturating_add(wanted) > quota {
            write_figure(lock, used).map_err(QuotaRefusal::Io)?;
            return Err(QuotaRefusal::Exceeded { used });
        }
    }
    if let Err(error) = file.write_all(bytes) {
        // Part of the chunk may be on disk: count what is there rather than guess.
        if let Ok(used) = usage(dir) {
            let _ = write_figure(lock, used);
        }
        return Err(QuotaRefusal::Io(error));
    }
    write_figure(lock, used + wanted).map_err(QuotaRefusal::Io)
}

fn open_lock(dir: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).truncate(false).read(true).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(dir.join(LOCK_FILE))
}

/// The figure's width: fixed, so rewriting it in place never leaves digits of a longer one.
const FIGURE_WIDTH: usize = 20;

/// The bytes the lock file says the directory holds; `None` when it says nothing usable
/// (a new lock file, or one an older version left empty).
fn read_figure(lock: &mut File) -> Option<u64> {
    let mut text = [0u8; FIGURE_WIDTH + 1];
    lock.seek(SeekFrom::Start(0)).ok()?;
    let read = read_up_to(lock, &mut text).ok()?;
    std::str::from_utf8(&text[..read]).ok()?.trim().parse().ok()
}

fn read_up_to(file: &mut File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn write_figure(lock: &mut File, used: u64) -> std::io::Result<()> {
    lock.seek(SeekFrom::Start(0))?;
    lock.write_all(format!("{used:0FIGURE_WIDTH$}\n").as_bytes())
}

/// Adds `delta` (negative: removed bytes) to the directory's figure. Call holding the lock.
fn adjust_figure(dir: &Path, delta: i64) -> std::io::Result<()> {
    let mut lock = open_lock(dir)?;
    let used = match read_figure(&mut lock) {
        Some(used) => used.saturating_add_signed(delta),
        None => usage(dir)?,
    };
    write_figure(&mut lock, used)
}

/// Counts the directory afresh and records the figure. Call holding the lock.
fn recount(dir: &Path) -> std::io::Result<u64> {
    let used = usage(dir)?;
    let mut lock = open_lock(dir)?;
    write_figure(&mut lock, used)?;
    Ok(used)
}

/// Removes a `.part` file this server wrote (`len` bytes) and takes its bytes off the
/// directory's figure, under the directory lock. Blocking.
pub fn remove_part(dir: &Path, part: &Path, len: u64) -> std::io::Result<()> {
    with_dir_lock(dir, || {
        std::fs::remove_file(part)?;
        adjust_figure(dir, -(len.min(i64::MAX as u64) as i64))
    })?
}

/// Gives a finished `.part` file its final name without replacing an existing file, under the
/// directory lock so a recount never sees both names (the bytes stay counted once). Blocking.
///
/// tempfile's no-clobber persist renames with `RENAME_NOREPLACE` where the kernel and file
/// system have it, else links and unlinks; an existing name fails with `AlreadyExists`.
pub fn commit_part(dir: &Path, part: &Path, target: &Path) -> std::io::Result<()> {
    with_dir_lock(dir, || {
        tempfile::TempPath::try_from_path(part)?
            .persist_noclobber(target)
            .map_err(|refused| {
                // The `.part` file stays for its owner to remove (and take off the figure).
                let _ = refused.path.keep();
                refused.error
            })
    })?
}

/// Bytes held by regular files directly in `dir`: completed downloads and live `.part` files.
/// An unreadable directory is an error, so the quota fails closed.
pub fn usage(dir: &Path) -> std::io::Result<u64> {
    #[cfg(test)]
    tests::SCANS.with(|scans| scans.set(scans.get() + 1));
    let mut used = 0u64;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name() == LOCK_FILE {
            continue;
        }
        match entry.metadata() {
            Ok(meta) if meta.is_file() => used = used.saturating_add(meta.len()),
            Ok(_) => {}
            // Removed between the listing and the look: it holds nothing now.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
    }
    Ok(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Directory listings made by [`usage`] on this thread.
        pub(super) static SCANS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn scans() -> usize {
        SCANS.with(std::cell::Cell::get)
    }

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        }
        dir
    }

    #[test]
    fn chunks_are_counted_without_listing_the_directory() {
        let dir = private_dir();
        fs::write(dir.path().join("earlier.bin"), vec![0u8; 1000]).unwrap();
        prepare_download_dir(dir.path()).unwrap();
        let part = dir.path().join("new.bin.part");
        let mut file = create_part(dir.path(), &part).unwrap();
        let mut quota = DirQuota::new(dir.path().to_path_buf(), 1_000_000);
        let before = scans();
        for _ in 0..1000 {
            quota.write_within(&mut file, &[7u8; 64]).ok().unwrap();
        }
        assert_eq!(scans(), before, "a chunk must not list the directory");
        // The figure is exact: what a fresh count finds.
        let mut lock = open_lock(dir.path()).unwrap();
        assert_eq!(read_figure(&mut lock), Some(1000 + 64_000));
        assert_eq!(usage(dir.path()).unwrap(), 1000 + 64_000);
        // Removing the partial file takes its bytes off the figure.
        drop(file);
        remove_part(dir.path(), &part, 64_000).unwrap();
        assert_eq!(read_figure(&mut lock), Some(1000));
    }

    #[test]
    fn a_stale_figure_is_counted_again_before_a_refusal() {
        let dir = private_dir();
        prepare_download_dir(dir.path()).unwrap();
        let part = dir.path().join("a.part");
        let mut file = create_part(dir.path(), &part).unwrap();
        let mut quota = DirQuota::new(dir.path().to_path_buf(), 100);
        // The figure says the directory is full, but the files were removed by hand.
        write_figure(&mut open_lock(dir.path()).unwrap(), 100).unwrap();
        quota.write_within(&mut file, &[1u8; 60]).ok().unwrap();
        // Now really full: refused with what the directory holds.
        match quota.write_within(&mut file, &[1u8; 60]) {
            Err(QuotaRefusal::Exceeded { used }) => assert_eq!(used, 60),
            _ => panic!("expected a refusal"),
        }
    }

    #[test]
    fn an_unreadable_directory_refuses_instead_of_counting_zero() {
        // A path that cannot be listed (a regular file stands where the directory should).
        let dir = private_dir();
        let not_a_dir = dir.path().join("file");
        fs::write(&not_a_dir, b"x").unwrap();
        assert!(usage(&not_a_dir).is_err());
        let mut lock = tempfile::tempfile().unwrap();
        let mut target = tempfile::tempfile().unwrap();
        match reserve_and_write(&not_a_dir, &mut lock, u64::MAX, &mut target, b"data") {
            Err(QuotaRefusal::Unreadable(_)) => {}
            _ => panic!("an unlistable directory must refuse the write"),
        }
        assert_eq!(target.metadata().unwrap().len(), 0, "nothing was written");
    }

    #[test]
    fn a_commit_keeps_the_bytes_counted_once() {
        let dir = private_dir();
        prepare_download_dir(dir.path()).unwrap();
        let part = dir.path().join("c.part");
        let mut file = create_part(dir.path(), &part).unwrap();
        let mut quota = DirQuota::new(dir.path().to_path_buf(), 1000);
        quota.write_within(&mut file, &[2u8; 300]).ok().unwrap();
        drop(file);
        let target = dir.path().join("c.bin");
        commit_part(dir.path(), &part, &target).unwrap();
        assert!(!part.exists() && target.exists());
        assert_eq!(usage(dir.path()).unwrap(), 300);
        assert_eq!(read_figure(&mut open_lock(dir.path()).unwrap()), Some(300));
        // An existing name is never replaced.
        let other = dir.path().join("d.part");
        fs::write(&other, b"new").unwrap();
        let refused = commit_part(dir.path(), &other, &target).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&target).unwrap(), vec![2u8; 300]);
    }
}
