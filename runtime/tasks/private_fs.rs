//! Private files for the task store: directories 0700, files 0600, owned by the server's
//! user, never reached through a symlink; writes are atomic (temp file, fsync, rename, fsync
//! of the directory).
//!
//! The ownership and mode checks are POSIX-only (`cfg(unix)`). Elsewhere only the symlink and
//! file-kind checks apply: on Windows, keep SNOWLUMA_MCP_TASK_DIR under the user's profile,
//! whose ACL already excludes other users.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::Path;

use super::error::TaskStoreError;

/// Temporary files from an interrupted write start with this; they were never renamed into
/// place, so the store removes them and loses nothing.
pub(crate) const TEMP_PREFIX: &str = ".tmp-";

/// What a privacy check needs to know about a path. Kept apart from `fs::Metadata` so the
/// rules can be tested with made-up owners and modes (tests run as root, where the kernel
/// would let every access through).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Observed {
    pub is_symlink: bool,
    pub is_dir: bool,
    pub is_file: bool,
    /// Owner and permission bits; `None` where the platform has no such notion.
    pub owner_and_mode: Option<(u32, u32)>,
}

/// The reason `observed` is not a private directory (`want_dir`) or file owned by `user`, with
/// the fix, or `None` when it is fine.
pub(crate) fn privacy_problem(observed: Observed, want_dir: bool, user: u32) -> Option<String> {
    let kind = if want_dir { "directory" } else { "file" };
    if observed.is_symlink {
        return Some(format!(
            "it is a symlink; point SNOWLUMA_MCP_TASK_DIR at the real {kind} instead"
        ));
    }
    if want_dir && !observed.is_dir || !want_dir && !observed.is_file {
        return Some(format!(
            "it is not a regular {kind}; remove it or choose another path"
        ));
    }
    let (owner, mode) = observed.owner_and_mode?;
    if owner != user {
        return Some(format!(
            "it is owned by uid {owner}, not by this server's uid {user}; use a {kind} owned \
             by the user running snowluma-mcp"
        ));
    }
    let private = if want_dir { 0o700 } else { 0o600 };
    if mode & 0o077 != 0 {
        return Some(format!(
            "its permissions are {:o}, which let group or others in; run chmod {private:o} on it",
            mode & 0o7777
        ));
    }
    None
}

#[cfg(unix)]
fn current_user() -> u32 {
    rustix::process::geteuid().as_raw()
}

#[cfg(not(unix))]
fn current_user() -> u32 {
    0
}

fn observe(path: &Path) -> Result<Observed, TaskStoreError> {
    let meta = fs::symlink_metadata(path).map_err(|source| TaskStoreError::Io {
        doing: "inspect",
        path: path.to_path_buf(),
        source,
    })?;
    #[cfg(unix)]
    let owner_and_mode = {
        use std::os::unix::fs::MetadataExt;
        Some((meta.uid(), meta.mode()))
    };
    #[cfg(not(unix))]
    let owner_and_mode = None;
    Ok(Observed {
        is_symlink: meta.file_type().is_symlink(),
        is_dir: meta.is_dir(),
        is_file: meta.is_file(),
        owner_and_mode,
    })
}

/// Fails unless `path` is a private directory (or file) of this user.
pub(crate) fn check_private(path: &Path, want_dir: bool) -> Result<(), TaskStoreError> {
    match privacy_problem(observe(path)?, want_dir, current_user()) {
        None => Ok(()),
        Some(problem) => Err(TaskStoreError::NotPrivate {
            path: path.to_path_buf(),
            problem,
        }),
    }
}

/// Creates `dir` (and missing parents) as 0700 when absent, then checks it is private.
pub(crate) fn ensure_private_dir(dir: &Path) -> Result<(), TaskStoreError> {
    if fs::symlink_metadata(dir).is_err() {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(dir).map_err(|source| TaskStoreError::Io {
            doing: "create directory",
            path: dir.to_path_buf(),
            source,
        })?;
    }
    check_private(dir, true)
}

/// Opens (creating as 0600 when absent) a private file for the lease.
pub(crate) fn open_private_file(path: &Path) -> Result<File, TaskStoreError> {
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    // Check before opening as well, so a planted symlink is refused rather than followed.
    if fs::symlink_metadata(path).is_ok() {
        check_private(path, false)?;
    }
    let file = options.open(path).map_err(|source| TaskStoreError::Io {
        doing: "open",
        path: path.to_path_buf(),
        source,
    })?;
    check_private(path, false)?;
    Ok(file)
}

/// Reads a private file of at most `limit` bytes. A larger file is corrupt by definition: the
/// store never writes one.
pub(crate) fn read_private(path: &Path, limit: usize) -> Result<Vec<u8>, TaskStoreError> {
    check_private(path, false)?;
    let io_err = |source| TaskStoreError::Io {
        doing: "read",
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() > limit {
        return Err(TaskStoreError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("it is larger than the {limit}-byte record limit"),
        });
    }
    Ok(bytes)
}

/// The first `head` bytes of a private file whose whole size must be at most `limit` bytes
/// (checked on the open file, without reading the rest).
pub(crate) fn read_private_head(
    path: &Path,
    head: usize,
    limit: usize,
) -> Result<Vec<u8>, TaskStoreError> {
    check_private(path, false)?;
    let io_err = |source| TaskStoreError::Io {
        doing: "read",
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let size = file.metadata().map_err(io_err)?.len();
    if size > limit as u64 {
        return Err(TaskStoreError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("it is larger than the {limit}-byte record limit"),
        });
    }
    let mut bytes = Vec::new();
    file.take(head as u64)
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    Ok(bytes)
}

/// Replaces `dir/name` with `bytes` so that a crash leaves either the old or the new content:
/// a 0600 temp file in the same directory, fsync, rename over the target, fsync the directory.
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), TaskStoreError> {
    let target = dir.join(name);
    let io_err = |doing| {
        let target = target.clone();
        move |source| TaskStoreError::Io {
            doing,
            path: target,
            source,
        }
    };
    // tempfile creates its files 0600 on POSIX.
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .map_err(io_err("create a temporary file for"))?;
    temp.write_all(bytes).map_err(io_err("write"))?;
    temp.as_file().sync_all().map_err(io_err("flush to disk"))?;
    temp.persist(&target)
        .map_err(|err| io_err("rename into place")(err.error))?;
    sync_dir(dir)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> Result<(), TaskStoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| TaskStoreError::Io {
            doing: "flush directory",
            path: dir.to_path_buf(),
            source,
        })
}

/// Directories cannot be opened for fsync on Windows; the rename is already durable there
/// (MoveFileEx with write-through is what std uses for persist).
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> Result<(), TaskStoreError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(owner: u32, mode: u32, is_dir: bool) -> Observed {
        Observed {
            is_symlink: false,
            is_dir,
            is_file: !is_dir,
            owner_and_mode: Some((owner, mode)),
        }
    }

    #[test]
    fn private_dir_and_file_pass() {
        assert_eq!(privacy_problem(seen(7, 0o40700, true), true, 7), None);
        assert_eq!(privacy_problem(seen(7, 0o100600, false), false, 7), None);
    }

    #[test]
    fn group_or_other_bits_are_refused_with_the_chmod_fix() {
        let problem = privacy_problem(seen(7, 0o40750, true), true, 7).unwrap();
        assert!(problem.contains("chmod 700"), "{problem}");
        let problem = privacy_problem(seen(7, 0o100604, false), false, 7).unwrap();
        assert!(problem.contains("chmod 600"), "{problem}");
    }

    #[test]
    fn foreign_owner_is_refused() {
        let problem = privacy_problem(seen(0, 0o40700, true), true, 1000).unwrap();
        assert!(problem.contains("uid 0"), "{problem}");
    }

    #[test]
    fn symlink_and_wrong_kind_are_refused() {
        let mut link = seen(7, 0o120777, false);
        link.is_symlink = true;
        assert!(privacy_problem(link, true, 7).unwrap().contains("symlink"));
        assert!(
            privacy_problem(seen(7, 0o100600, false), true, 7)
                .unwrap()
                .contains("not a regular directory")
        );
    }
}
