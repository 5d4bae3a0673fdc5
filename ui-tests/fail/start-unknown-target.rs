use graphwright::prelude::*;

#[graph]
mod intake {
    use super::*;

    #[state]
    pub struct State {
        pub urgent: bool,
    }

    #[start(next = triage | fiel)]
    fn route(state: &State) -> StartNext {
        if state.urgent { StartNext::Triage } else { StartNext::Fiel }
    }

    #[node(next = END)]
    fn triage(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = END)]
    fn file(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }
}

fn main() {}
