//! `rocescope inspect`: the terminal inspector (interfaces.md §9, style.md §2.8).
//!
//! - [`app`]: the state and [`app::Action`]s, no terminal and no drawing;
//! - [`ui`]: `render(&App, &mut Frame)`, drawing only; [`widgets`]: PSN chart, PFC timeline;
//! - [`layout`]: the geometry, pure functions of the screen size;
//! - [`event`]: `map_key` and `map_mouse`, the pure input mapping;
//! - [`tree`]: the field tree of the selected frame;
//! - [`worker`]: the index, replay and filter scans on their own threads, behind one handle.
//!
//! [`run`] restores the terminal on every exit: normal, error, panic (ratatui's hook) and
//! Ctrl-C (raw mode turns it into a key press that quits).

pub mod app;
pub mod event;
pub mod layout;
pub mod tree;
pub mod ui;
pub mod widgets;
pub mod worker;

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context, bail};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;

use crate::capture::CaptureReader;
pub use crate::config::InspectConfig;

/// Runs the inspector until `q`.
///
/// # Errors
/// A capture that cannot be opened or is not a regular file, no terminal, a terminal that
/// cannot be set up or read.
pub fn run(mut cfg: InspectConfig) -> anyhow::Result<()> {
    // Live: frames are spooled to a temporary pcapng (removed on exit) that the inspector
    // reads as it reads a file.
    let (_spool, source) = match &cfg.live {
        Some(live) => {
            // opened here, so that an interface or permission problem is one line before the
            // screen is taken, and the capture runs when the screen shows
            let source = crate::live::open(live)?;
            let spool = tempfile::Builder::new()
                .prefix("rocescope-live-")
                .suffix(".pcapng")
                .tempfile()
                .context("creating the live spool file")?;
            cfg.capture = spool.path().to_owned();
            check_terminal()?;
            (Some(spool), Some(source))
        }
        None => {
            check_before_taking_the_screen(&cfg)?;
            (None, None)
        }
    };
    // Before ratatui installs its panic hook (which restores the terminal and then calls this
    // one), so the mouse mode is switched off too.
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = execute!(std::io::stdout(), DisableMouseCapture);
        prev(info);
    }));
    let mut app = app::App::open_with(&cfg, source);
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let _ = execute!(std::io::stdout(), EnableMouseCapture);
    let result = event_loop(&mut terminal, &mut app);
    let _ = execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    result
}

/// The errors every other command gives in one line, given before the screen is taken over:
/// the capture (opened as `dissect` opens it, and a regular file, since the inspector reads
/// frames at random), and a terminal on both standard input and output.
fn check_before_taking_the_screen(cfg: &InspectConfig) -> anyhow::Result<()> {
    let path = &cfg.capture;
    // Looked at before opening: opening a FIFO would wait for a writer, and reading it (or
    // standard input) would consume what the inspector then could not read again.
    let not_regular = path.as_os_str() == "-"
        || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir());
    if not_regular {
        bail!(
            "{}: not a regular file (the inspector reads frames at random; `rocescope dissect` reads pipes and devices)",
            path.display()
        );
    }
    CaptureReader::open(path)?;
    // --tap: the other tap too
    for tap in &cfg.taps {
        CaptureReader::open(tap)?;
    }
    check_terminal()
}

fn check_terminal() -> anyhow::Result<()> {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        bail!(
            "inspect needs a terminal on standard input and output (for plain output use `rocescope dissect` or `rocescope analyze`)"
        );
    }
    Ok(())
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
        // Worker updates are taken between key presses: while the index grows (the frame count
        // and `G` follow it), look for them more often.
        let wait = if app.index_done { 50 } else { 10 };
        if crossterm::event::poll(Duration::from_millis(wait))? {
            let ev = crossterm::event::read()?;
            if let Some(action) = event::map_event(&ev, app.mode, &app.areas(), app.view) {
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
