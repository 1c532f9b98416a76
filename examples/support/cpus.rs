//! Where the bench driver's processes run, and where they ran. Include it with
//! `#[path = "support/cpus.rs"] mod cpus;`.
//!
//! A pass runs with a `Placement`: the processes it starts inherit the CPU set in force when
//! they are spawned (`before_spawn`), and the driver then runs on its own set (`after_spawn`).
//! Dropping the placement lets the driver use every CPU again. Off Linux, or when the affinity
//! calls are refused, no placement can be made and the pass is left out.

pub struct Placement {
    #[cfg(target_os = "linux")]
    all: rustix::thread::CpuSet,
    #[cfg(target_os = "linux")]
    spawn_on: rustix::thread::CpuSet,
    #[cfg(target_os = "linux")]
    run_on: rustix::thread::CpuSet,
}

#[cfg(target_os = "linux")]
impl Placement {
    /// The driver and everything it starts on the first CPU this process may use.
    pub fn one_cpu() -> Option<Placement> {
        let (all, cpus) = usable()?;
        let one = only(cpus[0]);
        Some(Placement {
            all,
            spawn_on: one,
            run_on: one,
        })
    }

    /// The driver on the first CPU, everything it starts on the second: every call crosses
    /// between CPUs, a floor's as much as the server's.
    pub fn apart() -> Option<Placement> {
        let (all, cpus) = usable()?;
        let second = *cpus.get(1)?;
        Some(Placement {
            all,
            spawn_on: only(second),
            run_on: only(cpus[0]),
        })
    }

    pub fn before_spawn(&self) {
        set(&self.spawn_on);
    }

    pub fn after_spawn(&self) {
        set(&self.run_on);
    }
}

#[cfg(target_os = "linux")]
impl Drop for Placement {
    fn drop(&mut self) {
        set(&self.all);
    }
}

#[cfg(target_os = "linux")]
fn usable() -> Option<(rustix::thread::CpuSet, Vec<usize>)> {
    use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
    let all = sched_getaffinity(None).ok()?;
    let cpus: Vec<usize> = (0..CpuSet::MAX_CPU)
        .filter(|cpu| all.is_set(*cpu))
        .collect();
    // Setting the set already in force tells whether this process may set it at all.
    sched_setaffinity(None, &all).ok()?;
    (!cpus.is_empty()).then_some((all, cpus))
}

#[cfg(target_os = "linux")]
fn only(cpu: usize) -> rustix::thread::CpuSet {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    set
}

#[cfg(target_os = "linux")]
fn set(cpus: &rustix::thread::CpuSet) {
    rustix::thread::sched_setaffinity(None, cpus).expect("set the driver's CPU affinity");
}

#[cfg(not(target_os = "linux"))]
impl Placement {
    pub fn one_cpu() -> Option<Placement> {
        None
    }

    pub fn apart() -> Option<Placement> {
        None
    }

    pub fn before_spawn(&self) {}

    pub fn after_spawn(&self) {}
}

/// Whether the process `pid` last ran (field 39 of /proc/PID/stat) on the CPU the driver is on
/// now; `None` where that cannot be read.
pub fn beside_driver(pid: u32) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may hold spaces; the fields after it are counted from
        // its closing parenthesis, which makes `processor` the 37th.
        let after = &stat[stat.rfind(')')? + 1..];
        let cpu: usize = after.split_whitespace().nth(36)?.parse().ok()?;
        Some(cpu == rustix::thread::sched_getcpu())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}
