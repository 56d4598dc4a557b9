//! Text for people: numbers grouped by thousands, and user-given strings (scene names, file names) made
//! safe to print, so a name holding terminal escape sequences cannot recolour, move or clear the terminal
//! it is printed to.

use std::borrow::Cow;

/// 1234567 -> "1 234 567".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// `s` with its control characters (C0, DEL, C1: escape, carriage return, bell, ...) written as Rust
/// escapes (`\u{1b}`, `\r`), line feeds too; borrowed unchanged when it has none.
pub fn printable(s: &str) -> Cow<'_, str> {
    escape_controls(s, false)
}

/// [`printable`] for multi-line text: line feeds (and tabs) stay, every other control character is escaped.
pub fn printable_lines(s: &str) -> Cow<'_, str> {
    escape_controls(s, true)
}

fn escape_controls(s: &str, keep_lines: bool) -> Cow<'_, str> {
    let kept = |c: char| !c.is_control() || (keep_lines && (c == '\n' || c == '\t'));
    if s.chars().all(kept) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if kept(c) {
            out.push(c);
        } else {
            out.extend(c.escape_default());
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1 000");
        assert_eq!(thousands(1234567), "1 234 567");
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(printable("Valley flood ü"), Cow::Borrowed("Valley flood ü")));
        assert_eq!(printable("a\u{1b}[2Jb\r\u{7}\u{9b}c"), "a\\u{1b}[2Jb\\r\\u{7}\\u{9b}c");
        assert_eq!(printable("two\nlines"), "two\\nlines");
        assert_eq!(printable_lines("two\nlines\u{1b}"), "two\nlines\\u{1b}");
    }
}
