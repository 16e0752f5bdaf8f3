pub mod analyze;
pub mod compare;
pub mod list;
pub mod matrix;
pub mod report;
pub mod run;
pub mod tune;
pub mod worker;
