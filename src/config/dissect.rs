//! `rocescope dissect`'s configuration.

use std::path::PathBuf;

use super::{Color, GlobalConfig};
use crate::cli;
use crate::filter::Filter;
use crate::source::FrameRange;

/// How `dissect` writes frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DissectFormat {
    /// One summary line per frame, tshark's columns.
    Text,
    /// The field tree, like `tshark -V`.
    Verbose,
    /// One JSON object per frame (interfaces.md §4).
    Jsonl,
    /// A header row and one row per frame.
    Csv,
    /// tshark's `-T fields`: the `-e` columns.
    Fields,
    /// Apache Parquet, one row per frame (interfaces.md §10), to `-o FILE`.
    Parquet,
}

impl From<cli::DissectFormat> for DissectFormat {
    fn from(f: cli::DissectFormat) -> Self {
        match f {
            cli::DissectFormat::Text => DissectFormat::Text,
            cli::DissectFormat::Verbose => DissectFormat::Verbose,
            cli::DissectFormat::Jsonl => DissectFormat::Jsonl,
            cli::DissectFormat::Csv => DissectFormat::Csv,
            cli::DissectFormat::Parquet => DissectFormat::Parquet,
        }
    }
}

/// Everything `rocescope dissect` needs, validated.
#[derive(Debug)]
pub struct DissectConfig {
    pub captures: Vec<PathBuf>,
    /// `-T fields`: the `-e` columns and the `-E` layout.
    pub fields: Vec<String>,
    pub layout: FieldsLayout,
    /// `-i IFACE`: a live interface instead of `captures`.
    pub live: Option<super::LiveConfig>,
    pub format: DissectFormat,
    /// `-o FILE`: the output goes there (complete or absent) instead of standard output.
    pub output: Option<PathBuf>,
    /// Compiled with the replay's analysis marks allowed (`loss`, `ooo`, …): when it uses
    /// them, `dissect` replays the capture first.
    pub filter: Option<Filter>,
    /// Stop after this many frames were shown.
    pub count: Option<u64>,
    pub frames: FrameRange,
    /// Extra UDP destination ports carrying RoCEv2.
    pub roce_ports: Vec<u16>,
    /// `--rd-as rd`.
    pub rd_as_rd: bool,
    pub link_bps: u64,
    pub quiet: bool,
    pub color: Color,
}

impl TryFrom<(&GlobalConfig, cli::DissectArgs)> for DissectConfig {
    type Error = anyhow::Error;

    fn try_from((global, args): (&GlobalConfig, cli::DissectArgs)) -> anyhow::Result<Self> {
        let frames = match &args.frames {
            Some(s) => s.parse()?,
            None => FrameRange::ALL,
        };
        let filter = match &args.filter {
            Some(expr) => Some(Filter::compile_with_marks(expr)?),
            None => None,
        };
        let live = super::live::live_input(global, &args.live, None)?;
        let mut format: DissectFormat = args.format.into();
        if args.verbose {
            format = DissectFormat::Verbose;
        }
        match args.tshark_format {
            Some(cli::TsharkFormat::Fields) => format = DissectFormat::Fields,
            Some(cli::TsharkFormat::Text) => format = DissectFormat::Text,
            Some(cli::TsharkFormat::Json | cli::TsharkFormat::Ek) => format = DissectFormat::Jsonl,
            None => {}
        }
        if format == DissectFormat::Fields && args.fields.is_empty() {
            anyhow::bail!("-T fields: name the columns with -e FIELD");
        }
        if format != DissectFormat::Fields && !args.fields.is_empty() {
            anyhow::bail!("-e: the columns are for -T fields");
        }
        check_columns(&args.fields).map_err(anyhow::Error::msg)?;
        let mut layout = FieldsLayout::default();
        for o in &args.field_options {
            layout.set(o).map_err(anyhow::Error::msg)?;
        }
        let mut captures = args.read;
        captures.extend(args.captures);
        if format == DissectFormat::Parquet && args.output.is_none() {
            anyhow::bail!("-f parquet writes a file: name it with -o FILE");
        }
        if live.is_some() && args.frames.is_some() {
            anyhow::bail!("--frames numbers frames of a file; with -i use -c");
        }
        Ok(DissectConfig {
            live,
            captures,
            fields: args.fields,
            layout,
            format,
            output: args.output,
            filter,
            count: args.count,
            frames,
            roce_ports: global.roce_ports.clone(),
            rd_as_rd: global.rd_as_rd,
            link_bps: global.link_bps,
            quiet: global.quiet,
            color: global.color,
        })
    }
}

/// How `-T fields` lays out its lines (`-E`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldsLayout {
    pub separator: String,
    pub aggregator: String,
    pub header: bool,
    /// `Some('"')` for `quote=d`, `Some('\'')` for `quote=s`.
    pub quote: Option<char>,
    pub occurrence: Occurrence,
}

/// `-E occurrence=`: which values of a field that occurs several times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occurrence {
    All,
    First,
    Last,
}

impl Default for FieldsLayout {
    fn default() -> Self {
        FieldsLayout {
            separator: "\t".into(),
            aggregator: ",".into(),
            header: false,
            quote: None,
            occurrence: Occurrence::All,
        }
    }
}

impl FieldsLayout {
    /// Applies one `-E KEY=VALUE`.
    ///
    /// # Errors
    /// An unknown key or value (one line, naming it).
    pub fn set(&mut self, option: &str) -> Result<(), String> {
        let (key, value) = option
            .split_once('=')
            .ok_or_else(|| format!("-E {option}: give KEY=VALUE (separator=, header=y …)"))?;
        let special = |v: &str| match v {
            "/t" => "\t".to_owned(),
            "/s" => " ".to_owned(),
            v => v.to_owned(),
        };
        match (key, value) {
            ("separator", v) => self.separator = special(v),
            ("aggregator", v) => self.aggregator = special(v),
            ("header", "y") => self.header = true,
            ("header", "n") => self.header = false,
            ("quote", "d") => self.quote = Some('"'),
            ("quote", "s") => self.quote = Some('\''),
            ("quote", "n") => self.quote = None,
            ("occurrence", "a") => self.occurrence = Occurrence::All,
            ("occurrence", "f") => self.occurrence = Occurrence::First,
            ("occurrence", "l") => self.occurrence = Occurrence::Last,
            _ => {
                return Err(format!(
                    "-E {option}: not a tshark field option (separator=, aggregator=, header=y|n, quote=d|s|n, occurrence=a|f|l)"
                ));
            }
        }
        Ok(())
    }
}

/// Checks the `-e` names.
///
/// # Errors
/// A name rocescope does not decode (one line).
fn check_columns(names: &[String]) -> Result<(), String> {
    for n in names {
        if crate::filter::fields::column(n).is_none() {
            return Err(format!(
                "-e {n}: not a field rocescope decodes (the display filter names are the ones -e takes)"
            ));
        }
    }
    Ok(())
}
