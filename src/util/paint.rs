//! Colour for the words a reader must not miss on a terminal (REGRESSED, ▼, INCOMPLETE): ANSI
//! styles put around text only when the command says so ([`Paint::on`]), decided once at the
//! command boundary from the stream, `NO_COLOR` and `CLICOLOR_FORCE`.

/// Whether to colour, and how: `Paint::off()` leaves text as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Paint {
    on: bool,
}

/// What a coloured word means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Worse: REGRESSED, ▼, failed.
    Bad,
    /// Better: improved, ▲.
    Good,
    /// Look here: INCOMPLETE, not comparable, drift.
    Warn,
    /// A heading or a name.
    Strong,
    /// What matters less: the legend.
    Faint,
}

impl Paint {
    pub fn on() -> Paint {
        Paint { on: true }
    }

    pub fn off() -> Paint {
        Paint { on: false }
    }

    pub fn is_on(self) -> bool {
        self.on
    }

    /// Colour for a stream: on a terminal, unless `NO_COLOR` is set (not empty); `CLICOLOR_FORCE`
    /// (not `0`) colours a pipe or file too; `TERM=dumb` never. `NO_COLOR` always wins.
    pub fn for_stream(terminal: bool, env: impl Fn(&str) -> Option<String>) -> Paint {
        let set = |k: &str| env(k).is_some_and(|v| !v.is_empty());
        if set("NO_COLOR") || env("TERM").as_deref() == Some("dumb") {
            return Paint::off();
        }
        let forced = env("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0");
        Paint {
            on: terminal || forced,
        }
    }

    /// `text` in `tone`, or as it is when colour is off. The text is never changed, so widths
    /// computed on it hold (the escape sequences take no columns).
    pub fn paint(self, text: &str, tone: Tone) -> String {
        if !self.on || text.is_empty() {
            return text.to_string();
        }
        let code = match tone {
            Tone::Bad => "1;31",
            Tone::Good => "1;32",
            Tone::Warn => "1;33",
            Tone::Strong => "1",
            Tone::Faint => "2",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }

    /// Colours every occurrence of the marked words of `text` (REGRESSED, INCOMPLETE, ▼, …).
    pub fn marks(self, text: &str) -> String {
        if !self.on {
            return text.to_string();
        }
        const MARKS: [(&str, Tone); 8] = [
            ("REGRESSED", Tone::Bad),
            ("▼", Tone::Bad),
            ("CHANGED both ways", Tone::Warn),
            ("IMPROVED", Tone::Good),
            ("improved", Tone::Good),
            ("▲", Tone::Good),
            ("INCOMPLETE", Tone::Warn),
            ("not comparable", Tone::Warn),
        ];
        let mut out = text.to_string();
        for (word, tone) in MARKS {
            out = out.replace(word, &self.paint(word, tone));
        }
        out
    }
}

/// `text` without ANSI escape sequences (`ESC [ … letter`): what a reader sees, for widths and
/// tests.
pub fn unpainted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn colour_on_a_terminal_only_and_never_with_no_color() {
        assert!(Paint::for_stream(true, env(&[])).is_on());
        assert!(!Paint::for_stream(false, env(&[])).is_on());
        assert!(!Paint::for_stream(true, env(&[("NO_COLOR", "1")])).is_on());
        assert!(Paint::for_stream(true, env(&[("NO_COLOR", "")])).is_on());
        assert!(Paint::for_stream(false, env(&[("CLICOLOR_FORCE", "1")])).is_on());
        assert!(!Paint::for_stream(false, env(&[("CLICOLOR_FORCE", "0")])).is_on());
        let both = [("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")];
        assert!(!Paint::for_stream(true, env(&both)).is_on());
        assert!(!Paint::for_stream(true, env(&[("TERM", "dumb")])).is_on());
    }

    #[test]
    fn painted_text_reads_the_same_without_its_escapes() {
        let text = "a REGRESSED ▼ row, one improved ▲, an INCOMPLETE run";
        let painted = Paint::on().marks(text);
        assert_ne!(painted, text);
        assert!(painted.contains("\x1b[1;31mREGRESSED\x1b[0m"), "{painted}");
        assert_eq!(unpainted(&painted), text);
        assert_eq!(Paint::off().marks(text), text);
        assert_eq!(Paint::off().paint("x", Tone::Bad), "x");
    }
}
