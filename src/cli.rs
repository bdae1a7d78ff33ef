//! Command-line flags (clap derive only; validated into configs in `config.rs`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Read, write, replay and explain RoCEv2 traffic.
#[derive(Debug, Parser)]
#[command(name = "rocescope", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub cmd: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Extra UDP destination port to treat as RoCEv2 (4791 always is); repeatable.
    #[arg(long = "roce-port", value_name = "PORT", global = true)]
    pub roce_ports: Vec<u16>,
    /// What the RD opcode range (0x40-0x5F) carries: NVIDIA DC (the default: no hardware
    /// implements IBA RD) or IBA RD.
    #[arg(long = "rd-as", value_enum, default_value_t = RdAs::Dc, global = true)]
    pub rd_as: RdAs,
    /// Link speed for PFC quanta to time (10G, 25G, 100G, 400G, 800G …).
    #[arg(long, value_name = "SPEED", default_value = "100G", global = true)]
    pub link_speed: String,
    /// Print nothing but errors and requested output.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Colour output.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    pub color: Color,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RdAs {
    Dc,
    Rd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decode every frame, like tshark.
    Dissect(DissectArgs),
    /// Replay per-QP PSN state: loss, reordering, retransmissions, NAKs, ECN/CNP, PFC.
    Analyze(AnalyzeArgs),
    /// Generate RoCEv2 traffic from a scenario file into a pcap/pcapng.
    Generate(GenerateArgs),
    /// Transmit a scenario's frames on a network interface, paced to a rate (needs root).
    Send(SendArgs),
    /// Browse a capture in the terminal: frames, field tree, bytes, flows, events, PSN and PFC views.
    Inspect(InspectArgs),
    /// Capture live traffic from an interface into a pcapng file (needs root or CAP_NET_RAW).
    Capture(CaptureArgs),
    /// Print a shell completion script: `source <(rocescope completions bash)`.
    Completions(CompletionsArgs),
    /// Print the man page (roff): `rocescope man | man -l -`.
    Man,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellArg {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: ShellArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// libpcap for RDMA devices (mlx5_0 …), the packet socket for network interfaces.
    Auto,
    /// The Linux packet socket (AF_PACKET, memory-mapped ring).
    Packet,
    /// libpcap (builds with `--features libpcap` only).
    Libpcap,
}

/// Live input, for `dissect`, `analyze` and `inspect` (instead of capture files).
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// Capture from this interface (or RDMA device) instead of reading files (root or CAP_NET_RAW).
    #[arg(
        short = 'i',
        long = "interface",
        visible_alias = "iface",
        value_name = "IFACE"
    )]
    pub iface: Option<String>,
    /// Live: keep every frame, not only RoCE, RoCEv1, PFC/PAUSE, tcp_bth and tunnels.
    #[arg(long, requires = "iface")]
    pub all: bool,
    /// Live: bytes kept of each frame.
    #[arg(long, value_name = "BYTES", requires = "iface")]
    pub snaplen: Option<u32>,
    /// Live: stop after this long (10s, 500ms, 2m); Ctrl-C stops too.
    #[arg(long, value_name = "TIME", requires = "iface")]
    pub duration: Option<String>,
    /// Live: the capture backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Live: kernel buffer for frames not yet read (8M, 128M, 1G), as tcpdump -B.
    #[arg(short = 'B', long = "buffer", value_name = "SIZE", requires = "iface")]
    pub buffer: Option<String>,
}

#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// Interface (or RDMA device, with the libpcap backend) to capture from.
    #[arg(
        short = 'i',
        long = "interface",
        visible_alias = "iface",
        value_name = "IFACE"
    )]
    pub iface: String,
    /// pcapng file to write (with --ring, the name the numbered files are made from).
    #[arg(short = 'w', long = "write", value_name = "FILE.pcapng")]
    pub output: PathBuf,
    /// Stop after this many frames.
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this long (10s, 500ms, 2m).
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,
    /// Bytes kept of each frame.
    #[arg(long, value_name = "BYTES")]
    pub snaplen: Option<u32>,
    /// Keep every frame, not only RoCE, RoCEv1, PFC/PAUSE, tcp_bth and tunnels.
    #[arg(long)]
    pub all: bool,
    /// Rotate: keep at most N files (FILE_00001.pcapng …), the oldest removed.
    #[arg(long, value_name = "N", requires = "ring_size")]
    pub ring: Option<u32>,
    /// Rotate when a file reaches this size (100M, 1G, 64K).
    #[arg(long, value_name = "SIZE", requires = "ring")]
    pub ring_size: Option<String>,
    /// How often the counters go to stderr (when it is a terminal).
    #[arg(long, value_name = "TIME", default_value = "1s")]
    pub stats_every: String,
    /// The capture backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Kernel buffer for frames not yet read (8M, 128M, 1G), as tcpdump -B.
    #[arg(short = 'B', long = "buffer", value_name = "SIZE")]
    pub buffer: Option<String>,
}

/// `analyze --help` for `--fail-on`: the groups and every event kind (interfaces.md §6.6; a
/// test checks it names every kind the engine reports).
pub const FAIL_ON_HELP: &str = "Exit 1 when any of these event kinds or groups occurred.

Groups:
  loss         a flow lost PSNs in the network (lost > 0), read_response_gap, dropped_between,
               tcp_bth_gap (gaps that were only capture drops do not count)
  nak          every nak_* kind
  pfc          pfc_pause, pfc_storm
  integrity    icrc_error, malformed, corrupted_between, tcp_bth_icrc_error
  capture      not_captured, truncated
  conformance  gbn_wrong_start, repeated_nak, ack_regression, msn_regression,
               read_wrong_restart, response_after_fatal_nak

Kinds:
  request stream  psn_gap, out_of_order, duplicate, retransmission, implied_timeout,
                  not_captured
  responses       nak_psn_seq_err, nak_rnr, nak_invalid_request, nak_remote_access,
                  nak_remote_op, nak_invalid_rd, read_response_gap, unanswered_read
  congestion      ecn_ce, cnp, pfc_pause, pfc_resume, pfc_storm
  integrity       icrc_error, malformed, truncated
  conformance     gbn_wrong_start, repeated_nak, ack_regression, msn_regression,
                  read_wrong_restart, response_after_fatal_nak
  two taps        dropped_between, corrupted_between, reordered_between
  tcp_bth         tcp_bth_gap, tcp_bth_out_of_order, tcp_bth_retransmission,
                  tcp_bth_duplicate, tcp_bth_icrc_error, tcp_bth_offset_mismatch,
                  tcp_bth_contiguity, tcp_bth_msn_gap, tcp_bth_msn_regression,
                  tcp_bth_opcode_grammar, tcp_bth_seg_continuity, tcp_bth_length,
                  tcp_bth_missing_first, tcp_bth_immediate, tcp_bth_read_pairing,
                  tcp_bth_inconsistent_retransmit, tcp_bth_no_payload, tcp_bth_coalesced";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnalyzeFormat {
    Text,
    Json,
    Csv,
    /// Apache Parquet: a file per table in the -o DIRECTORY.
    Parquet,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Capture files (pcap or pcapng; `-` for standard input); several are merged by time.
    #[arg(
        required_unless_present_any = ["iface", "tap"],
        conflicts_with_all = ["iface", "tap"],
        value_name = "CAPTURE"
    )]
    pub captures: Vec<PathBuf>,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Two captures of the same traffic at two points of its path (give --tap twice, the
    /// upstream one first if known): each replayed, and their packets matched to tell what
    /// was dropped, corrupted, reordered, marked or delayed between them.
    #[arg(long, value_name = "CAPTURE", conflicts_with_all = ["iface", "each"])]
    pub tap: Vec<PathBuf>,
    /// --tap: how long a packet seen at one tap waits for its copy at the other.
    #[arg(long, value_name = "TIME", default_value = "1s")]
    pub tap_window: String,
    /// Analyze every capture on its own (not merged), several at once over the cores: -f json
    /// writes a line per capture (with `capture`), -f text the reports one after another.
    #[arg(long, conflicts_with = "iface")]
    pub each: bool,
    /// Live: a line per flow with new findings goes to stderr at once, then at most this often.
    #[arg(long, value_name = "TIME", default_value = "1s")]
    pub report_every: String,
    /// Report format: text for people, json for scripts, csv for the flow table, parquet
    /// for analytics engines (a directory of tables, -o DIR).
    #[arg(short, long, value_enum, default_value_t = AnalyzeFormat::Text)]
    pub format: AnalyzeFormat,
    /// Write the report here instead of standard output (-f parquet: a directory).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit 1 when any of these event kinds or groups occurred.
    #[arg(
        long,
        value_name = "KIND[,KIND…]",
        value_delimiter = ',',
        long_help = FAIL_ON_HELP
    )]
    pub fail_on: Vec<String>,
    /// How many events the text report lists (JSON lists all).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub events: usize,
    /// A (source, priority) paused longer than this without a break is a PFC storm.
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub pfc_storm_ms: u64,
    /// A go-back this long after the flow's previous request is a timeout (10ms, 500us …).
    #[arg(long, value_name = "DURATION", default_value = "1ms")]
    pub rto_min: String,
    /// ICRC checks: auto (a file whose ICRCs all fail is taken as a sniffer's), trust
    /// (every wrong ICRC is a corrupted frame), ignore (never check).
    #[arg(long, value_enum, default_value_t = IcrcArg::Auto)]
    pub icrc: IcrcArg,
    /// Flows the text report lists, the worst first (a number, or `all`).
    #[arg(long, value_name = "N|all", default_value = "50")]
    pub flows: String,
    /// Engines the flows are sharded over, each on its thread (0: one engine). The default
    /// shards on four cores or more; the report is the same either way.
    #[arg(long, value_name = "N", hide = true)]
    pub shards: Option<usize>,
    /// On two threads, which dissects the frames: the reading thread while the engine's is
    /// busy (balanced, the default), the reading thread always, or the engine's. For
    /// measurements (bench/replay-instructions.sh); the report is the same either way.
    #[arg(long, value_enum, hide = true)]
    pub split: Option<SplitArg>,
}

/// `analyze --split`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SplitArg {
    Balanced,
    Reader,
    Engine,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IcrcArg {
    Auto,
    Trust,
    Ignore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TsharkFormat {
    Fields,
    Text,
    Json,
    Ek,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DissectFormat {
    Text,
    Verbose,
    Jsonl,
    Csv,
    /// Apache Parquet, one row per frame (needs -o FILE).
    Parquet,
}

#[derive(Debug, Args)]
pub struct DissectArgs {
    /// Capture files (pcap or pcapng; `-` for standard input); several are merged by time.
    #[arg(
        required_unless_present_any = ["iface", "read"],
        conflicts_with = "iface",
        value_name = "CAPTURE"
    )]
    pub captures: Vec<PathBuf>,
    /// A capture file, as tshark's -r (the same as naming it).
    #[arg(
        short = 'r',
        long = "read-file",
        value_name = "FILE",
        conflicts_with = "iface"
    )]
    pub read: Vec<PathBuf>,
    /// tshark's output switch: fields (the -e columns), text, json or ek (rocescope's JSON
    /// lines for both).
    #[arg(short = 'T', value_enum, value_name = "FORMAT")]
    pub tshark_format: Option<TsharkFormat>,
    /// A column of -T fields (a Wireshark field name); repeatable.
    #[arg(short = 'e', value_name = "FIELD")]
    pub fields: Vec<String>,
    /// -T fields layout, as tshark: separator=/t|/s|C, aggregator=C, header=y|n,
    /// quote=d|s|n, occurrence=a|f|l; repeatable.
    #[arg(short = 'E', value_name = "KEY=VALUE")]
    pub field_options: Vec<String>,
    /// The field tree of every frame, as tshark -V (the same as -f verbose).
    #[arg(short = 'V')]
    pub verbose: bool,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = DissectFormat::Text)]
    pub format: DissectFormat,
    /// Write the output here instead of standard output (complete or not at all); -f parquet
    /// needs it.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Display filter (Wireshark syntax for the fields rocescope decodes).
    #[arg(short = 'Y', long = "filter", value_name = "EXPR")]
    pub filter: Option<String>,
    /// Stop after this many frames have been shown.
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// Only frames A to B (1-based, inclusive), e.g. `10-20`, `10-`, `7`.
    #[arg(long, value_name = "A-B")]
    pub frames: Option<String>,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Scenario file (TOML).
    #[arg(value_name = "SCENARIO")]
    pub scenario: PathBuf,
    /// Output capture: `.pcapng` writes pcapng, anything else pcap. A scenario captured at
    /// both points (`[capture] point = "both"`) writes two: `-o A -o B`, or one `-o OUT` for
    /// OUT with `.tx` and `.rx` before its extension.
    #[arg(short, long, value_name = "OUT", required = true)]
    pub output: Vec<PathBuf>,
    /// Random seed: the same seed gives the same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write what the faults must produce, in `analyze -f json` keys.
    #[arg(long, value_name = "TRUTH.json")]
    pub truth: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Scenario file (TOML); its frames go out in the order `generate` writes them.
    #[arg(value_name = "SCENARIO")]
    pub scenario: PathBuf,
    /// Network interface to send on (raw socket: needs root or CAP_NET_RAW).
    #[arg(short, long, value_name = "IF")]
    pub iface: String,
    /// Target rate: bits/s of frame bytes (10Gbps, 400Mbps, 1e9) or frames/s (2Mpps, 500Kpps);
    /// without it, as fast as the interface takes them.
    #[arg(short, long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Stop after this many frames (or at the end of the scenario, which does not loop).
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this long (10s, 500ms, 2m), or at the end of the scenario.
    #[arg(short, long, value_name = "TIME")]
    pub duration: Option<String>,
    /// Random seed: the same seed gives the same bytes as `generate --seed`.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How frames reach the interface: an AF_XDP socket in copy mode where it opens, else a
    /// packet socket (auto, the default); only AF_XDP; only the packet socket. For
    /// measurements and tests (bench/send-vs-tcpreplay.sh, tests/send_netns.rs).
    #[arg(long, value_enum, default_value = "auto", hide = true)]
    pub tx: TxArg,
}

/// `send --tx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TxArg {
    Auto,
    Xdp,
    Packet,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Capture file (pcap or pcapng) to browse.
    #[arg(
        required_unless_present_any = ["iface", "tap"],
        conflicts_with_all = ["iface", "tap"],
        value_name = "CAPTURE"
    )]
    pub capture: Option<PathBuf>,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Two captures of the same traffic at two points (give --tap twice): the first one's
    /// frames, the flow table with what happened between the taps, the events between them;
    /// T switches to the other tap.
    #[arg(long, value_name = "CAPTURE", conflicts_with = "iface")]
    pub tap: Vec<PathBuf>,
    /// Display filter applied when the inspector opens.
    #[arg(short = 'Y', long = "filter", value_name = "EXPR")]
    pub filter: Option<String>,
}
