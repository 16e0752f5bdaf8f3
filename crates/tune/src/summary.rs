//! The JSON summary of a tune, schema `trtmc.tuning-summary/v1` (schemas/tuning-summary.schema.json).
//! The types live in `trtmc_core::artifacts::tune_summary` (the report reads the same ones); they are
//! re-exported here because the engine builds them.

pub use trtmc_core::artifacts::tune_summary::{
    ChosenRoute, Counts, DOUBTFUL_CV, Decision, DecisionKind, FinalistResult, HeadToHeadSummary,
    Margin, RacingSummary, RouteSummary, StopReason, TUNING_SUMMARY_SCHEMA, TuneContext,
    TuneSummary, cv_warning,
};
