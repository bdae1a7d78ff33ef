//! Input mapping: terminal events to [`Action`]s. Pure functions, no state.

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use super::app::{Action, FilterKind, Mode, View};
use super::layout::{self, Areas};

/// The action of one key press in `mode` (releases and repeats of other kinds are ignored).
#[must_use]
pub fn map_key(key: KeyEvent, mode: Mode) -> Option<Action> {
    if !key.is_press() {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    match mode {
        Mode::Help => Some(match key.code {
            KeyCode::Char('q') => Action::Quit,
            _ => Action::CloseHelp,
        }),
        Mode::Filter => Some(match key.code {
            KeyCode::Enter => Action::FilterSubmit,
            KeyCode::Esc => Action::FilterCancel,
            KeyCode::Backspace => Action::FilterBackspace,
            KeyCode::Left => Action::FilterLeft,
            KeyCode::Right => Action::FilterRight,
            KeyCode::Char(c) if !ctrl => Action::FilterChar(c),
            _ => return None,
        }),
        Mode::Normal => Some(match key.code {
            KeyCode::Char('q') => Action::Quit,
            KeyCode::Char('?') => Action::Help,
            KeyCode::Char('f') => Action::OpenFilter(FilterKind::Display),
            KeyCode::Char('/') => Action::OpenFilter(FilterKind::Search),
            KeyCode::Char('n') => Action::NextMatch,
            KeyCode::Char('N') => Action::PrevMatch,
            KeyCode::Char('g') | KeyCode::Home => Action::Top,
            KeyCode::Char('G' | 'F') | KeyCode::End => Action::Bottom,
            KeyCode::Up | KeyCode::Char('k') => Action::Up,
            KeyCode::Down | KeyCode::Char('j') => Action::Down,
            KeyCode::PageUp => Action::PageUp,
            KeyCode::PageDown | KeyCode::Char(' ') => Action::PageDown,
            KeyCode::Left | KeyCode::Char('h') => Action::Collapse,
            KeyCode::Right | KeyCode::Char('l') => Action::Expand,
            KeyCode::Enter => Action::Enter,
            KeyCode::Tab => Action::NextPane,
            KeyCode::Esc => Action::ClearFilter,
            KeyCode::Char('1') => Action::Show(View::Frames),
            KeyCode::Char('2') => Action::Show(View::Flows),
            KeyCode::Char('3') => Action::Show(View::Events),
            KeyCode::Char('4') => Action::Show(View::Psn),
            KeyCode::Char('5') => Action::Show(View::Pfc),
            KeyCode::Char('T') => Action::SwitchTap,
            _ => return None,
        }),
    }
}

/// The action of a mouse event over the screen laid out as `areas`; `frames` says whether the
/// frames screen (list and tree) is shown.
#[must_use]
pub fn map_mouse(m: MouseEvent, areas: &Areas, frames: bool) -> Option<Action> {
    let hit = layout::hit(areas, frames, m.column, m.row);
    let scroll = match m.kind {
        MouseEventKind::Down(MouseButton::Left) => None,
        MouseEventKind::ScrollUp => Some(-3),
        MouseEventKind::ScrollDown => Some(3),
        _ => return None,
    };
    Some(Action::Point { hit, scroll })
}

/// The action of any terminal event, in `mode`, over the screen laid out as `areas`.
#[must_use]
pub fn map_event(ev: &Event, mode: Mode, areas: &Areas, view: View) -> Option<Action> {
    if let Some(k) = ev.as_key_press_event() {
        return map_key(k, mode);
    }
    match ev {
        Event::Mouse(m) => map_mouse(*m, areas, view == View::Frames),
        Event::Resize(width, height) => Some(Action::Resize {
            width: *width,
            height: *height,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crossterm::event::KeyEventKind;

    #[test]
    fn presses_only() {
        let mut k = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(map_key(k, Mode::Normal), Some(Action::Quit));
        k.kind = KeyEventKind::Release;
        assert_eq!(map_key(k, Mode::Normal), None);
        let k = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(map_key(k, Mode::Filter), Some(Action::FilterChar('q')));
        let c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(map_key(c, Mode::Filter), Some(Action::Quit));
    }
}
