//! Whether this process is one of several started by `mpirun` (or `mpiexec`, `srun` with PMI): the
//! launchers put the job's size in the environment before MPI is initialised, so the command line can
//! choose the process-per-rank path (src/cluster/mpi.rs) without initialising MPI in every run. Open MPI
//! sets `OMPI_COMM_WORLD_SIZE`, MPICH's and Intel MPI's Hydra and Slurm's PMI set `PMI_SIZE`.

/// Environment variables that hold the size of an MPI job, in the order they are read.
pub const SIZE_VARS: [&str; 2] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"];

/// Environment variables that hold this process's rank in an MPI job (the same launchers).
pub const RANK_VARS: [&str; 2] = ["OMPI_COMM_WORLD_RANK", "PMI_RANK"];

/// This process's rank as the launcher wrote it into `var`; `None` outside an MPI job. Known before MPI
/// is initialised: ranks other than 0 log warnings and errors only.
pub fn launched_rank(var: impl Fn(&str) -> Option<String>) -> Option<usize> {
    RANK_VARS.iter().find_map(|k| var(k)).and_then(|v| v.trim().parse::<usize>().ok())
}

/// What a build without the `mpi` feature says when it is started as one of several MPI processes
/// (rather than running that many independent copies of the same simulation).
pub const BUILT_WITHOUT_MPI: &str = "built without MPI: rebuild with --features mpi (cargo build --release \
     --features mpi) to run one rank per process, or run waterview without mpirun";

/// The job's size as the launcher wrote it into `var` (the first of [`SIZE_VARS`] that is set and a
/// positive count); `None` when this process was not started by an MPI launcher.
pub fn launched_size(var: impl Fn(&str) -> Option<String>) -> Option<usize> {
    SIZE_VARS.iter().find_map(|k| var(k)).and_then(|v| v.trim().parse::<usize>().ok()).filter(|&n| n > 0)
}

/// [`launched_size`] of this process's environment.
pub fn launched_size_from_env() -> Option<usize> {
    launched_size(|k| std::env::var(k).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_come_from_open_mpi_or_pmi() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(launched_size(env(&[])), None);
        assert_eq!(launched_size(env(&[("OMPI_COMM_WORLD_SIZE", "4")])), Some(4));
        assert_eq!(launched_size(env(&[("PMI_SIZE", "2")])), Some(2));
        assert_eq!(launched_size(env(&[("OMPI_COMM_WORLD_SIZE", "3"), ("PMI_SIZE", "9")])), Some(3));
        assert_eq!(launched_size(env(&[("PMI_SIZE", "0")])), None);
        assert_eq!(launched_size(env(&[("PMI_SIZE", "many")])), None);
        assert_eq!(launched_rank(env(&[])), None);
        assert_eq!(launched_rank(env(&[("OMPI_COMM_WORLD_RANK", "0")])), Some(0));
        assert_eq!(launched_rank(env(&[("PMI_RANK", "3")])), Some(3));
    }
}
