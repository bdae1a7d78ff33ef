//! The inspector's geometry: pure functions of the screen size and a few counts. The renderer
//! draws into these areas, the input mapping and the state read them for mouse hits and page
//! sizes, so neither has to ask the other.

use ratatui::layout::{Constraint, Layout, Position, Rect};

/// The screen's areas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Areas {
    pub tabs: Rect,
    pub main: Rect,
    pub list: Rect,
    pub tree: Rect,
    pub hex: Rect,
    pub filter: Rect,
    pub status: Rect,
}

/// Splits a `width` × `height` screen; the filter bar takes `filter_lines` (2 with an error).
#[must_use]
pub fn areas(width: u16, height: u16, filter_lines: u16) -> Areas {
    let area = Rect::new(0, 0, width, height);
    let [tabs, main, filter, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(filter_lines),
        Constraint::Length(1),
    ])
    .areas(area);
    let [list, bottom] =
        Layout::vertical([Constraint::Percentage(45), Constraint::Min(3)]).areas(main);
    let [tree, hex] =
        Layout::horizontal([Constraint::Min(20), Constraint::Length(76)]).areas(bottom);
    Areas {
        tabs,
        main,
        list,
        tree,
        hex,
        filter,
        status,
    }
}

/// Between two tab titles.
pub const TAB_SEP: &str = " │ ";

/// The text of tab `i` (1-based key, then the title).
#[must_use]
pub fn tab_label(i: usize, title: &str) -> String {
    format!("{} {title}", i + 1)
}

/// Which of the tabs titled `titles` is at `column` of the tab line.
#[must_use]
pub fn tab_at<'a>(column: u16, titles: impl IntoIterator<Item = &'a str>) -> Option<usize> {
    let mut x = 1usize;
    for (i, title) in titles.into_iter().enumerate() {
        let w = tab_label(i, title).chars().count();
        if (x..x + w).contains(&usize::from(column)) {
            return Some(i);
        }
        x += w + TAB_SEP.chars().count();
    }
    None
}

/// Rows of frames the list shows (border and header row taken off).
#[must_use]
pub fn list_rows(list: Rect) -> usize {
    usize::from(list.height.saturating_sub(3)).max(1)
}

/// Rows a table screen (flows, events) shows in `main`.
#[must_use]
pub fn table_rows(main: Rect) -> usize {
    usize::from(main.height.saturating_sub(3)).max(1)
}

/// The first row a table screen (flows, events) shows when it has `rows` of room and row
/// `selected` is selected: the top until the selection passes the last row, then the
/// selection on the last row (where ratatui's `Table` puts it when scrolled from the top).
/// Only the rows from there are built: a fabric's capture has hundreds of thousands.
#[must_use]
pub fn table_top(selected: usize, rows: usize) -> usize {
    selected.saturating_sub(rows.max(1) - 1)
}

/// First visible line of the field tree in `tree`, with line `selected` of `total` selected.
#[must_use]
pub fn tree_top(tree: Rect, selected: usize, total: usize) -> usize {
    let h = usize::from(tree.height.saturating_sub(2)).max(1);
    if selected < h {
        return 0;
    }
    selected.saturating_sub(h / 3).min(total.saturating_sub(h))
}

/// What a pointer at (`column`, `row`) is over. Rows are counted from the first data row of
/// the pane (after its border and header), `None` on the border or header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// The tab line, at this column.
    Tab(u16),
    /// The frame list (frames screen).
    List(Option<usize>),
    /// The field tree (frames screen).
    Tree(Option<usize>),
    /// The main area of the other screens (tables, charts).
    Main(Option<usize>),
    Nothing,
}

/// Where (`column`, `row`) falls; `frames` says whether the frames screen is shown (list and
/// tree) or another one (the main area as a whole).
#[must_use]
pub fn hit(areas: &Areas, frames: bool, column: u16, row: u16) -> Hit {
    let at = Position::new(column, row);
    // Border and header rows come first in the list and the tables, the border in the tree.
    let below = |top: u16, skip: u16| (row >= top + skip).then(|| usize::from(row - top - skip));
    if frames && areas.list.contains(at) {
        Hit::List(below(areas.list.y, 2))
    } else if frames && areas.tree.contains(at) {
        Hit::Tree(below(areas.tree.y, 1))
    } else if areas.main.contains(at) {
        Hit::Main(below(areas.main.y, 2))
    } else if row == areas.tabs.y {
        Hit::Tab(column)
    } else {
        Hit::Nothing
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn hits_and_tabs() {
        let a = areas(120, 40, 1);
        assert_eq!((a.tabs.y, a.list.y), (0, 1));
        assert_eq!(hit(&a, true, 5, 5), Hit::List(Some(2)));
        assert_eq!(hit(&a, true, 5, 2), Hit::List(None));
        assert_eq!(hit(&a, false, 5, 5), Hit::Main(Some(2)));
        assert_eq!(hit(&a, true, 25, 0), Hit::Tab(25));
        let titles = ["Frames", "Flows", "Events"];
        assert_eq!(tab_at(1, titles), Some(0));
        assert_eq!(tab_at(25, titles), Some(2));
        assert_eq!(tab_at(200, titles), None);
        assert_eq!(tree_top(Rect::new(0, 0, 40, 12), 3, 50), 0);
        assert_eq!(tree_top(Rect::new(0, 0, 40, 12), 20, 50), 17);
    }
}
