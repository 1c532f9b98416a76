//! Test-only seam, compiled only with the `test-knobs` feature (which `cargo test` enables and
//! shipped builds never do): a slow disk for task records that a test opens and closes.
//!
//! While the file named by [`TASK_WRITE_HOLD_VAR`] exists, every task record write waits
//! before it touches the directory, after creating `<that path>.waiting` so the test knows a
//! write is being held. A gate rather than a delay: the test decides when the disk is "slow",
//! so what it observes meanwhile does not depend on timing.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// Names the hold file.
pub const TASK_WRITE_HOLD_VAR: &str = "SNOWLUMA_MCP_TEST_TASK_WRITE_HOLD";

/// Waits while the hold file exists. Runs on the blocking pool, like every record write.
pub(crate) fn hold_record_write() {
    static HOLD: OnceLock<Option<PathBuf>> = OnceLock::new();
    let Some(hold) = HOLD.get_or_init(|| std::env::var_os(TASK_WRITE_HOLD_VAR).map(PathBuf::from))
    else {
        return;
    };
    if !hold.exists() {
        return;
    }
    let mut waiting = hold.clone().into_os_string();
    waiting.push(".waiting");
    let _ = std::fs::write(&waiting, b"");
    while hold.exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
}
