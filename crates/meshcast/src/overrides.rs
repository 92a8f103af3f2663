//! `--set KEY=VALUE`: override any value of a scenario before it is read.
//!
//! `KEY` is a dotted path; array elements are picked by index, written
//! either way: `duration_s`, `link[0].capacity_kbps`, `link.0.capacity_kbps`,
//! `event[2].rate_kbps`, `report.window[0].to_s`. `VALUE` is a TOML value
//! (`500`, `0.01`, `true`, `"text"`); anything that does not parse as one is
//! taken as a string, so `--set node[0].kind=router` works unquoted.
//!
//! The override is applied to the file's text with `toml_edit`, which keeps
//! all other lines as they are, so errors still point at the right line of
//! the file; an error in a value written by `--set` names the override.
//! A missing key in an existing table is added (the schema check then
//! rejects it if the schema has no such field); a missing table or an index
//! past the end of an array is an error.

use crate::scenario::ScenarioError;
use std::fmt;
use std::str::FromStr;
use toml_edit::{DocumentMut, Item, TableLike, Value};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// One `--set KEY=VALUE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    key: String,
    value: String,
    path: Vec<Seg>,
}

impl Override {
    fn last_key(&self) -> Option<&str> {
        self.path.iter().rev().find_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        })
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

impl FromStr for Override {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (key, value) = s
            .split_once('=')
            .ok_or_else(|| format!("expected KEY=VALUE, got {s:?}"))?;
        let key = key.trim();
        let mut path = Vec::new();
        for part in key.split('.') {
            // `name[3][4]` or `name` or `3`.
            let (name, mut rest) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if name.is_empty() && rest.is_empty() {
                return Err(format!("empty component in key {key:?}"));
            }
            if !name.is_empty() {
                path.push(match name.parse::<usize>() {
                    Ok(i) => Seg::Index(i),
                    Err(_) => Seg::Key(name.to_owned()),
                });
            }
            while !rest.is_empty() {
                let close = rest
                    .find(']')
                    .ok_or_else(|| format!("unclosed '[' in {key:?}"))?;
                let idx = rest[1..close]
                    .parse::<usize>()
                    .map_err(|_| format!("bad index {:?} in {key:?}", &rest[1..close]))?;
                path.push(Seg::Index(idx));
                rest = &rest[close + 1..];
                if !rest.is_empty() && !rest.starts_with('[') {
                    return Err(format!("unexpected {rest:?} in {key:?}"));
                }
            }
        }
        if !matches!(path.first(), Some(Seg::Key(_))) {
            return Err(format!("key {key:?} must start with a name"));
        }
        Ok(Override {
            key: key.to_owned(),
            value: value.trim().to_owned(),
            path,
        })
    }
}

fn parse_value(s: &str) -> Value {
    s.parse::<Value>().unwrap_or_else(|_| Value::from(s))
}

fn set_in(t: &mut dyn TableLike, path: &[Seg], value: Value) -> Result<(), String> {
    let Some((Seg::Key(k), rest)) = path.split_first() else {
        return Err("an index must follow an array".into());
    };
    if rest.is_empty() {
        match t.get_mut(k) {
            Some(Item::Value(old)) => {
                let mut value = value;
                *value.decor_mut() = old.decor().clone();
                *old = value;
            }
            Some(_) => return Err(format!("{k:?} is a table or array of tables, not a value")),
            None => {
                t.insert(k, Item::Value(value));
            }
        }
        return Ok(());
    }
    match t.get_mut(k) {
        None => Err(format!("no table {k:?}")),
        Some(Item::Table(t2)) => set_in(t2, rest, value),
        Some(Item::Value(Value::InlineTable(t2))) => set_in(t2, rest, value),
        Some(Item::ArrayOfTables(aot)) => {
            let Some((Seg::Index(i), rest)) = rest.split_first() else {
                return Err(format!("{k:?} is an array: give an index, e.g. {k}[0]"));
            };
            let n = aot.len();
            let tbl = aot
                .get_mut(*i)
                .ok_or_else(|| format!("{k}[{i}]: only {n} entries"))?;
            if rest.is_empty() {
                return Err(format!("{k}[{i}] is a table: set one of its fields"));
            }
            set_in(tbl, rest, value)
        }
        Some(Item::Value(Value::Array(arr))) => match rest {
            [Seg::Index(i)] => {
                let n = arr.len();
                let slot = arr
                    .get_mut(*i)
                    .ok_or_else(|| format!("{k}[{i}]: only {n} entries"))?;
                *slot = value;
                Ok(())
            }
            _ => Err(format!("{k:?} is an array of values: give one index")),
        },
        Some(_) => Err(format!("{k:?} is a value, not a table")),
    }
}

/// Apply `sets` to `text`. Returns the new text and, for each of its
/// lines, the 1-based line of the original it came from or the override
/// that wrote it.
#[allow(clippy::type_complexity)]
pub(crate) fn apply(
    file: &str,
    text: &str,
    sets: &[Override],
) -> Result<(String, Vec<Result<usize, String>>), ScenarioError> {
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let span = e.span().unwrap_or(0..0);
        let before = &text[..span.start.min(text.len())];
        ScenarioError {
            file: file.to_owned(),
            line: before.matches('\n').count() + 1,
            column: before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1,
            field: "-".into(),
            message: e.message().trim().to_owned(),
            set_by: None,
        }
    })?;
    for s in sets {
        set_in(doc.as_table_mut(), &s.path, parse_value(&s.value)).map_err(|m| ScenarioError {
            file: file.to_owned(),
            line: 0,
            column: 0,
            field: s.key.clone(),
            message: m,
            set_by: Some(s.to_string()),
        })?;
    }
    let new = doc.to_string();
    let old: Vec<&str> = text.lines().collect();
    let key_of = |l: &str| l.split('=').next().unwrap_or("").trim().to_owned();
    let mut lines = Vec::new();
    let mut i = 0;
    for l in new.lines() {
        if i < old.len() && old[i] == l {
            lines.push(Ok(i + 1));
            i += 1;
            continue;
        }
        let key = key_of(l);
        let by = sets
            .iter()
            .rev()
            .find(|s| s.last_key() == Some(key.as_str()))
            .map_or_else(|| "overrides".to_owned(), ToString::to_string);
        lines.push(Err(by));
        if i < old.len() && key_of(old[i]) == key {
            i += 1; // changed in place
        }
    }
    Ok((new, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(s: &str) -> Override {
        s.parse().unwrap()
    }

    #[test]
    fn keys_parse_both_ways() {
        assert_eq!(
            o("link[0].capacity_kbps=5").path,
            o("link.0.capacity_kbps=5").path
        );
        assert_eq!(
            o("report.window[1].to_s = 9").path,
            vec![
                Seg::Key("report".into()),
                Seg::Key("window".into()),
                Seg::Index(1),
                Seg::Key("to_s".into())
            ]
        );
        assert!("novalue".parse::<Override>().is_err());
        assert!("[0].x=1".parse::<Override>().is_err());
        assert!("a[x].b=1".parse::<Override>().is_err());
        assert!("a..b=1".parse::<Override>().is_err());
    }

    #[test]
    fn apply_keeps_lines_and_attributes_changes() {
        let text = "name = \"x\"\nduration_s = 10\n\n[[link]]\nfrom = \"A\" # c\nto = \"B\"\n";
        let (new, lines) = apply(
            "f",
            text,
            &[o("duration_s=20"), o("link[0].to=C"), o("link[0].loss=0.5")],
        )
        .unwrap();
        assert_eq!(
            new,
            "name = \"x\"\nduration_s = 20\n\n[[link]]\nfrom = \"A\" # c\nto = \"C\"\nloss = 0.5\n"
        );
        assert_eq!(lines[0], Ok(1));
        assert_eq!(lines[1], Err("duration_s=20".into()));
        assert_eq!(lines[4], Ok(5));
        assert_eq!(lines[5], Err("link[0].to=C".into()));
        assert_eq!(lines[6], Err("link[0].loss=0.5".into()));
        let e = apply("f", text, &[o("link[3].to=C")]).unwrap_err();
        assert!(e.message.contains("only 1 entries"), "{e}");
        let e = apply("f", text, &[o("link=3")]).unwrap_err();
        assert!(e.message.contains("not a value"), "{e}");
    }
}
