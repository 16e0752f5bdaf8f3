pub mod analyze;
pub mod list;
pub mod run;
pub mod worker;
