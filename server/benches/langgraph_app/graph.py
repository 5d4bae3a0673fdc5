"""The `chat` graph of examples/serve.rs, written for LangGraph, for the side-by-side server
benchmark: an agent that answers, or calls a weather tool first when asked about the weather."""

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph


def agent(state: MessagesState):
    last = state["messages"][-1]
    reply_id = f"reply-{len(state['messages'])}"
    if last.type == "human" and "weather" in str(last.content).lower():
        call = {"id": f"call-{len(state['messages'])}", "name": "weather", "args": {"city": "Oslo"}}
        return {"messages": [AIMessage(content="", id=reply_id, tool_calls=[call])]}
    if last.type == "tool":
        text = f"The weather in Oslo: {last.content}."
    else:
        text = f"You said: {last.content}"
    return {"messages": [AIMessage(content=text, id=reply_id)]}


def after(state: MessagesState):
    return "weather" if state["messages"][-1].tool_calls else END


def weather(state: MessagesState):
    call = state["messages"][-1].tool_calls[0]
    return {"messages": [ToolMessage(content="4 °C and light rain", tool_call_id=call["id"], name="weather")]}


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_node("weather", weather)
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", after, ["weather", END])
builder.add_edge("weather", "agent")
graph = builder.compile()
