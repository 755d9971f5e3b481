//! The skill catalog for the system prompt: names and one-line descriptions, deterministic
//! (sorted, no timestamps or paths) so the prompt prefix stays cacheable, and never longer than
//! its character budget: descriptions are shortened first, names dropped only when the names
//! alone do not fit.

use super::SkillRegistry;
use crate::text::{collapse_whitespace, cut};

/// Default size of the whole catalog, in characters.
pub const DEFAULT_CATALOG_BUDGET: usize = 8_000;
/// No description is shown longer than this (the specification's maximum).
pub const MAX_DESCRIPTION_CHARS: usize = 1_024;

/// What the model is told about the list before it.
pub const CATALOG_INTRO: &str = "These are the available skills. The list holds only each \
skill's name and description: before following a skill, a project workflow or a command the \
user names, call `load_skill` with the skill's name to get its instructions. `load_skill` only \
loads instructions; it runs nothing.";

/// The catalog when there is nothing to list.
pub const NO_SKILLS: &str = "No skills are available.";

/// The catalog text: the intro, a blank line, then `- NAME: DESCRIPTION` per skill in name
/// order, never more than `budget` characters. When it would exceed the budget, every
/// description is cut to the same largest length that fits (ending in `…`); if names alone do
/// not fit, the first names in order are listed, then a line counting the others (which
/// `load_skill` still loads, and names when asked for an unknown skill). A budget too small
/// for even that gives an empty catalog.
pub fn catalog(registry: &SkillRegistry, budget: usize) -> String {
    // A skill only the user invokes (`disable-model-invocation`) is not the model's to load.
    let entries: Vec<(&str, String)> = registry
        .skills()
        .iter()
        .filter(|s| s.model_invocable)
        .map(|s| (s.name.as_str(), collapse_whitespace(&s.description)))
        .collect();
    if entries.is_empty() {
        return within(NO_SKILLS.to_string(), budget);
    }
    let full = render(&entries, MAX_DESCRIPTION_CHARS);
    if full.chars().count() <= budget {
        return full;
    }
    if render(&entries, 0).chars().count() > budget {
        return first_names(&entries, budget);
    }
    // The rendered length grows with the cap, so the largest cap that fits is found by
    // bisection over 0..MAX_DESCRIPTION_CHARS (cap 0 = names only, known to fit).
    let (mut lo, mut hi) = (0usize, MAX_DESCRIPTION_CHARS);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if render(&entries, mid).chars().count() <= budget {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    render(&entries, lo)
}

fn within(text: String, budget: usize) -> String {
    if text.chars().count() <= budget {
        text
    } else {
        String::new()
    }
}

/// The line that ends a catalog listing only the first names.
pub fn more_line(more: usize) -> String {
    format!(
        "\n- … and {more} more, not listed for lack of room (load_skill with a name it does not know lists them all)"
    )
}

/// The intro, as many names (without descriptions) as fit in order, and the line counting the
/// rest; empty when not even the intro and that line fit.
fn first_names(entries: &[(&str, String)], budget: usize) -> String {
    let n = entries.len();
    let mut used = CATALOG_INTRO.chars().count() + 1;
    let mut listed = None;
    for (k, (name, _)) in entries.iter().enumerate() {
        if used + more_line(n - k).chars().count() <= budget {
            listed = Some(k);
        }
        used += 3 + name.chars().count();
        if used > budget {
            break;
        }
    }
    let Some(k) = listed else {
        return String::new();
    };
    let mut out = String::from(CATALOG_INTRO);
    out.push('\n');
    for (name, _) in &entries[..k] {
        out.push_str("\n- ");
        out.push_str(name);
    }
    out.push_str(&more_line(n - k));
    out
}

fn render(entries: &[(&str, String)], cap: usize) -> String {
    let mut out = String::from(CATALOG_INTRO);
    out.push('\n');
    for (name, description) in entries {
        let description = cut(description, cap);
        out.push_str("\n- ");
        out.push_str(name);
        if !description.is_empty() {
            out.push_str(": ");
            out.push_str(&description);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::Skill;

    fn skill(name: &str, description: &str) -> Skill {
        crate::skills::test_util::project_skill(name, description)
    }

    #[test]
    fn empty_catalog_is_one_line() {
        assert_eq!(catalog(&SkillRegistry::default(), 8000), NO_SKILLS);
        assert!(!NO_SKILLS.contains('\n'));
    }

    #[test]
    fn lines_are_sorted_and_one_line() {
        let reg = SkillRegistry::new([skill("zeta", "last\n  one"), skill("alpha", "first")]);
        let text = catalog(&reg, DEFAULT_CATALOG_BUDGET);
        assert_eq!(
            text,
            format!("{CATALOG_INTRO}\n\n- alpha: first\n- zeta: last one")
        );
    }

    #[test]
    fn long_descriptions_are_cut_at_1024() {
        let reg = SkillRegistry::new([skill("a", &"x".repeat(2000))]);
        let text = catalog(&reg, 100_000);
        let line = text.lines().last().unwrap_or_default();
        assert_eq!(line, format!("- a: {}…", "x".repeat(1023)));
    }

    #[test]
    fn over_budget_shortens_evenly_and_keeps_every_name() {
        let skills: Vec<Skill> = (0..40)
            .map(|i| skill(&format!("skill-{i:02}"), &"word ".repeat(100)))
            .collect();
        let reg = SkillRegistry::new(skills);
        let text = catalog(&reg, 4000);
        assert!(text.chars().count() <= 4000, "{}", text.chars().count());
        for i in 0..40 {
            assert!(text.contains(&format!("\n- skill-{i:02}: word")), "{i}");
        }
        // Evenly: every line has the same cut description.
        let lines: Vec<&str> = text.lines().skip(2).collect();
        assert_eq!(lines.len(), 40);
        let first_desc = lines[0].split_once(": ").map(|x| x.1).unwrap_or_default();
        assert!(first_desc.ends_with('…'));
        assert!(lines
            .iter()
            .all(|l| l.split_once(": ").map(|x| x.1) == Some(first_desc)));
        // The largest cap: one more character per description would not fit.
        let cap = first_desc.chars().count();
        assert!(render_len(&reg, cap + 2) > 4000);
    }

    fn render_len(reg: &SkillRegistry, cap: usize) -> usize {
        let entries: Vec<(&str, String)> = reg
            .skills()
            .iter()
            .map(|s| (s.name.as_str(), s.description.clone()))
            .collect();
        render(&entries, cap).chars().count()
    }

    #[test]
    fn names_alone_over_budget_list_the_first_that_fit() {
        // Names of the longest kind: the line counting the rest is shorter than two of them.
        let [a, b, c] = ['a', 'b', 'c'].map(|ch| ch.to_string().repeat(64));
        let reg = SkillRegistry::new([skill(&a, "d1"), skill(&b, "d2"), skill(&c, "d3")]);
        let names_only = format!("{CATALOG_INTRO}\n\n- {a}\n- {b}\n- {c}");
        assert_eq!(catalog(&reg, names_only.chars().count()), names_only);
        let one = format!("{CATALOG_INTRO}\n\n- {a}{}", more_line(2));
        // Two names and the line for the third take more than one name and the line for two.
        let budget = one.chars().count();
        assert_eq!(catalog(&reg, budget), one);
        assert_eq!(catalog(&reg, names_only.chars().count() - 1), one);
        let none = format!("{CATALOG_INTRO}\n{}", more_line(3));
        assert_eq!(catalog(&reg, budget - 1), none);
        assert_eq!(catalog(&reg, none.chars().count()), none);
        assert_eq!(catalog(&reg, none.chars().count() - 1), "");
        assert_eq!(catalog(&reg, 0), "");
        assert_eq!(catalog(&SkillRegistry::default(), 10), "");
    }
}
