//! Where the jobs of a verb run, shared by the matrix and `tune --executor slurm`: Slurm job arrays
//! (submitting one, reading its tasks' states, checking the controller first), and the environment
//! file that describes the machine they run on.

pub mod environment;
pub mod slurm;
