//! `rocescope generate`'s configuration.

use std::path::PathBuf;

use crate::cli;

/// A validated `generate` invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerateConfig {
    pub scenario: PathBuf,
    pub output: PathBuf,
    pub seed: u64,
    /// Where to write the truth JSON, if anywhere.
    pub truth: Option<PathBuf>,
}

impl From<cli::GenerateArgs> for GenerateConfig {
    fn from(args: cli::GenerateArgs) -> Self {
        GenerateConfig {
            scenario: args.scenario,
            output: args.output,
            seed: args.seed,
            truth: args.truth,
        }
    }
}
