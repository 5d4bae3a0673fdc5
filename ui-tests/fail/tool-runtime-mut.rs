use graphwright::prelude::*;

/// Look up the weather.
#[tool]
fn weather(city: String, rt: &mut ToolRuntime) -> String {
    format!("{city} {}", rt.tool_call_id())
}

fn main() {
    let _ = tools![Weather];
}
