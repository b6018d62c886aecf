"""A two-player grid game over Whetstone's HTTP environment protocol, with several agents.

Tic-tac-toe: agents "x" and "o" take turns naming a cell 1-9. A one-agent game speaks
OpenTinker's protocol as it is; a game of several agents uses Whetstone's extension of it
(docs/http-environments.md, "Several agents"): /reset answers who moves first (`agent`) and each
agent's system prompt (`system_prompts`); each /step names the agent that acted (`agent`) and
answers who moves next and each agent's reward (`rewards`). Run it with

    pip install fastapi uvicorn
    python examples/http-environments/tictactoe_server.py --port 8082

and give an HTTP environment of kind multi-agent, agents ["x", "o"], its URL.
"""

import argparse
import re
from typing import Any, Dict, List

import uvicorn
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict

app = FastAPI(title="Whetstone example: tic-tac-toe")

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
OTHER = {"x": "o", "o": "x"}

# instance_id -> {"board": 9 cells of "x", "o" or ".", "mover": "x" or "o"}
games: Dict[str, Dict[str, Any]] = {}


class Reset(BaseModel):
    model_config = ConfigDict(extra="allow")
    instance_id: str = "default"
    job_id: str = "default"


class Step(BaseModel):
    instance_id: str = "default"
    job_id: str = "default"
    action: str = ""
    agent: str = ""


class Finalize(BaseModel):
    instance_id: str = "default"
    job_id: str = "default"


def render(board: List[str], mover: str) -> str:
    rows = [" ".join(board[r * 3 : r * 3 + 3]) for r in range(3)]
    return "\n".join(rows) + f"\nYou are {mover}. Your cell (1-9):"


@app.get("/health")
def health() -> Dict[str, str]:
    return {"status": "healthy"}


@app.post("/reset")
def reset(request: Reset) -> Dict[str, Any]:
    board = ["."] * 9
    games[request.instance_id] = {"board": board, "mover": "x"}
    rule = "Tic-tac-toe on cells 1-9 (left to right, top to bottom). Answer with one free cell."
    return {
        "observation": render(board, "x"),
        "agent": "x",
        "system_prompts": {"x": f"{rule} You play x.", "o": f"{rule} You play o."},
    }


@app.post("/step")
def step(request: Step) -> Dict[str, Any]:
    game = games.get(request.instance_id)
    if game is None:
        raise HTTPException(status_code=404, detail=f"Instance {request.instance_id} not found. Call /reset first.")
    mover = game["mover"]
    if request.agent != mover:
        raise HTTPException(status_code=409, detail=f"it is {mover}'s turn, not {request.agent or 'nobody'}'s")
    board = game["board"]
    other = OTHER[mover]
    match = re.search(r"[1-9]", request.action)
    cell = int(match.group()) - 1 if match else -1
    if cell < 0 or board[cell] != ".":
        # An illegal move loses the game for its mover.
        return {"observation": "", "done": True, "rewards": {mover: -1.0, other: 1.0}, "info": {"illegal": True, "winner": other}}
    board[cell] = mover
    if any(board[a] == board[b] == board[c] == mover for a, b, c in LINES):
        return {"observation": "", "done": True, "rewards": {mover: 1.0, other: -1.0}, "info": {"winner": mover}}
    if "." not in board:
        return {"observation": "", "done": True, "rewards": {mover: 0.0, other: 0.0}, "info": {"winner": None}}
    game["mover"] = other
    return {"observation": render(board, other), "done": False, "agent": other, "rewards": {mover: 0.0, other: 0.0}}


@app.post("/finalize")
def finalize(request: Finalize) -> Dict[str, str]:
    games.pop(request.instance_id, None)
    return {"message": "removed"}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8082)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
