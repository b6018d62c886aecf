"""A data-dependent math game over Whetstone's HTTP environment protocol (OpenTinker's).

The dataset row's fields arrive flat in the /reset body (here `ground_truth`); the model answers
in one turn, and the reward is 1 when its answer is that number. Run it with

    pip install fastapi uvicorn
    python examples/http-environments/math_server.py --port 8081

and point an HTTP environment at http://127.0.0.1:8081 (docs/http-environments.md).
"""

import argparse
import re
from typing import Any, Dict, Optional

import uvicorn
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict

app = FastAPI(title="Whetstone example: math")

# instance_id -> the answer it expects. A real server would bound this (finalize frees it).
games: Dict[str, str] = {}
# Statistics per job, as OpenTinker's servers keep them: /stats/reset starts a job's afresh.
stats: Dict[str, Dict[str, float]] = {}


class Reset(BaseModel):
    # The row's fields come as extra keys: the game reads the ones it knows.
    model_config = ConfigDict(extra="allow")
    instance_id: str = "default"
    job_id: str = "default"
    ground_truth: Optional[str] = None


class Step(BaseModel):
    instance_id: str = "default"
    job_id: str = "default"
    action: str = ""


class Finalize(BaseModel):
    instance_id: str = "default"
    job_id: str = "default"


@app.get("/health")
def health() -> Dict[str, str]:
    return {"status": "healthy"}


@app.post("/reset")
def reset(request: Reset) -> Dict[str, Any]:
    if request.ground_truth is None:
        raise HTTPException(status_code=400, detail="this game needs a row with ground_truth")
    games[request.instance_id] = str(request.ground_truth).strip()
    return {
        "observation": "Answer with the number only.",
        "system_prompt": "You solve arithmetic problems.",
    }


@app.post("/step")
def step(request: Step) -> Dict[str, Any]:
    expected = games.get(request.instance_id)
    if expected is None:
        raise HTTPException(status_code=404, detail=f"Instance {request.instance_id} not found. Call /reset first.")
    numbers = re.findall(r"-?\d+", request.action)
    correct = bool(numbers) and numbers[0] == expected
    job = stats.setdefault(request.job_id, {"games": 0, "correct": 0})
    job["games"] += 1
    job["correct"] += 1 if correct else 0
    return {
        "observation": "correct" if correct else f"the answer was {expected}",
        "reward": 1.0 if correct else 0.0,
        "done": True,
        "info": {"correct": correct, "answer": expected},
    }


@app.post("/finalize")
def finalize(request: Finalize) -> Dict[str, str]:
    games.pop(request.instance_id, None)
    return {"message": f"Instance {request.instance_id} removed"}


@app.post("/stats/reset")
def reset_stats(job_id: str = "default") -> Dict[str, Any]:
    stats[job_id] = {"games": 0, "correct": 0}
    return {"job_id": job_id}


@app.get("/stats")
def get_stats(job_id: str = "default") -> Dict[str, Any]:
    return {"job_id": job_id, **stats.get(job_id, {"games": 0, "correct": 0})}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
