//! `rocescope inspect`: the terminal inspector (interfaces.md §9, style.md §2.8).
//!
//! - [`app`]: the state and [`app::Action`]s, no terminal;
//! - [`ui`]: `render(&App, &mut Frame)`, drawing only; [`widgets`]: PSN chart, PFC timeline;
//! - [`event`]: `map_key`, the pure key/mouse mapping;
//! - [`worker`]: the index, replay and filter scans on their own threads.
//!
//! [`run`] restores the terminal on every exit: normal, error, panic (ratatui's hook) and
//! Ctrl-C (raw mode turns it into a key press that quits).

pub mod app;
pub mod event;
pub mod ui;
pub mod widgets;
pub mod worker;

use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;

use crate::cli::{GlobalArgs, InspectArgs};
use crate::config::parse_link_speed;

/// Validated settings of `rocescope inspect`.
#[derive(Debug, Clone)]
pub struct InspectConfig {
    pub capture: PathBuf,
    pub filter: Option<String>,
    pub roce_ports: Vec<u16>,
    pub link_bps: u64,
}

impl InspectConfig {
    /// Settings for `capture` with the defaults of the command line.
    #[must_use]
    pub fn new(capture: impl Into<PathBuf>) -> Self {
        InspectConfig {
            capture: capture.into(),
            filter: None,
            roce_ports: Vec::new(),
            link_bps: 100_000_000_000,
        }
    }
}

impl TryFrom<(&GlobalArgs, InspectArgs)> for InspectConfig {
    type Error = anyhow::Error;

    fn try_from((global, args): (&GlobalArgs, InspectArgs)) -> anyhow::Result<Self> {
        if args.capture.as_os_str() == "-" {
            anyhow::bail!("inspect needs a capture file, not standard input");
        }
        Ok(InspectConfig {
            capture: args.capture,
            filter: args.filter,
            roce_ports: global.roce_ports.clone(),
            link_bps: parse_link_speed(&global.link_speed)?,
        })
    }
}

/// Runs the inspector until `q`.
///
/// # Errors
/// A terminal that cannot be set up or read.
pub fn run(cfg: InspectConfig) -> anyhow::Result<()> {
    // Before ratatui installs its panic hook (which restores the terminal and then calls this
    // one), so the mouse mode is switched off too.
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = execute!(std::io::stdout(), DisableMouseCapture);
        prev(info);
    }));
    let mut app = app::App::open(&cfg);
    let mut terminal = ratatui::init();
    let _ = execute!(std::io::stdout(), EnableMouseCapture);
    let result = event_loop(&mut terminal, &mut app);
    let _ = execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    result
}

fn event_loop(terminal: &mut ratatui::DefaultTerminal, app: &mut app::App) -> anyhow::Result<()> {
    let size = terminal.size()?;
    app.apply(app::Action::Resize {
        width: size.width,
        height: size.height,
    });
    let mut dirty = true;
    while !app.should_quit {
        if dirty {
            terminal.draw(|f| ui::render(app, f))?;
            dirty = false;
        }
        if crossterm::event::poll(Duration::from_millis(50))? {
            let ev = crossterm::event::read()?;
            if let Some(action) = event::map_event(&ev, app.mode) {
                app.apply(action);
            }
            dirty = true;
        }
        if app.pump() {
            dirty = true;
        }
    }
    Ok(())
}
