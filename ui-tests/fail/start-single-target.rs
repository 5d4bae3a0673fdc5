use graphwright::prelude::*;

#[graph]
mod intake {
    use super::*;

    #[state]
    pub struct State {
        pub urgent: bool,
    }

    #[start(next = triage)]
    fn route(_state: &State) -> StartNext {
        StartNext::Triage
    }

    #[node(next = END)]
    fn triage(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }
}

fn main() {}
