//! `rocescope generate`'s configuration.

use std::path::PathBuf;

use crate::cli;

/// A validated `generate` invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerateConfig {
    pub scenario: PathBuf,
    /// One capture, or the sender side's and the receiver side's of a two-tap scenario (one
    /// name given: `.tx`/`.rx` added when the scenario is read).
    pub output: PathBuf,
    pub second_output: Option<PathBuf>,
    pub seed: u64,
    /// Where to write the truth JSON, if anywhere.
    pub truth: Option<PathBuf>,
}

impl TryFrom<cli::GenerateArgs> for GenerateConfig {
    type Error = anyhow::Error;

    fn try_from(args: cli::GenerateArgs) -> anyhow::Result<Self> {
        let [output, rest @ ..] = args.output.as_slice() else {
            anyhow::bail!("-o: name the capture to write");
        };
        if rest.len() > 1 {
            anyhow::bail!(
                "-o: one capture, or two for a scenario captured at both points (got {})",
                args.output.len()
            );
        }
        Ok(GenerateConfig {
            scenario: args.scenario,
            output: output.clone(),
            second_output: rest.first().cloned(),
            seed: args.seed,
            truth: args.truth,
        })
    }
}
