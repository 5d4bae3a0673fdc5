//! Names of generated items, shared by the checks and by codegen.

/// `support` → `Support`, `tool_router` → `ToolRouter`, `END` → `End`.
pub(crate) fn pascal(name: &str) -> String {
    if name == "END" {
        return "End".to_owned();
    }
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>()).unwrap_or_default()
        })
        .collect()
}
