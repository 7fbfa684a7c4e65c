// serve/openenv-models.ts against pydantic itself: OpenEnv's models (types.py and mcp_types.py of
// meta-pytorch/OpenEnv at 685de41, copied below as they are written there) and the served FrozenLake's
// action model written as an OpenEnv env author would write it, their model_json_schema() and their
// validation errors compared with ours. Skipped with a notice where python3 has no pydantic (the protocol
// tests in openenv.test.ts and openenv-python.test.ts need none).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { envConfig, envSpec } from '../../src/envs/index.ts';
import { actionModel, decodeAction, STATE_SCHEMA, validate } from '../../src/serve/openenv-models.ts';

const probe = spawnSync('python3', ['-c', 'import pydantic; print(pydantic.VERSION)'], { encoding: 'utf8' });
const skip = probe.status === 0 ? false : 'python3 with pydantic is not available';
if (skip) process.stderr.write(`openenv-models.test.ts: skipped: ${skip}\n`);

const lake = envSpec({ ...envConfig('frozenlake', { map: '4x4' }), seed: 0 });
const sql = envSpec({ ...envConfig('sql', {}), seed: 0 });

const PYTHON = `
import json, sys
from typing import Any, Dict, Literal, Optional
from pydantic import BaseModel, ConfigDict, Field, ValidationError

class Action(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)
    metadata: Dict[str, Any] = Field(default_factory=dict, description="Additional metadata for the action")

class State(BaseModel):
    """Base class for environment state.

    Represents internal environment state, separate from observations.
    """
    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)
    episode_id: Optional[str] = Field(default=None, description="Unique identifier for the current episode")
    step_count: int = Field(default=0, ge=0, description="Number of steps taken in the current episode")

class CallToolAction(Action):
    """
    Call a specific tool via MCP.

    This action triggers MCP's tools/call operation with the
    specified tool name and arguments.
    """
    type: Literal["call_tool"] = Field(default="call_tool", description="Action type discriminator")
    tool_name: str = Field(description="Name of the tool to call")
    arguments: Dict[str, Any] = Field(default_factory=dict, description="Arguments to pass to the tool")

class ListToolsAction(Action):
    type: Literal["list_tools"] = Field(default="list_tools", description="Action type discriminator")

instructions = json.loads(sys.argv[1])
move = type("move", (Action,), {
    "__doc__": instructions,
    "__annotations__": {"direction": Literal["Left", "Down", "Right", "Up"]},
})

cases = json.loads(sys.stdin.read())
models = {"move": move, "CallToolAction": CallToolAction, "ListToolsAction": ListToolsAction}
out = {"schemas": {k: m.model_json_schema() for k, m in models.items()}, "state": State.model_json_schema(), "errors": []}
for name, data in cases:
    try:
        models[name].model_validate(data)
        out["errors"].append([])
    except ValidationError as e:
        out["errors"].append(json.loads(e.json()))
print(json.dumps(out))
`;

test("our action models and State are what pydantic writes for OpenEnv's classes: schemas and errors", {
  skip,
}, () => {
  const cases: [string, Record<string, unknown>][] = [
    ['move', { direction: 'Left' }],
    ['move', { direction: 'left' }],
    ['move', {}],
    ['move', { direction: 3, metadata: [] }],
    ['move', { direction: 'Up', speed: 1, metadata: { a: 1 } }],
    ['CallToolAction', { tool_name: 'execute_sql', arguments: { query: 'SELECT 1' } }],
    ['CallToolAction', { tool_name: 5, arguments: 'x', extra: null }],
    ['CallToolAction', { type: 'list_tools', tool_name: 'a' }],
    ['CallToolAction', { arguments: {} }],
    ['ListToolsAction', { type: 'list_tools', tool: 1 }],
  ];
  const r = spawnSync('python3', ['-c', PYTHON, JSON.stringify(lake.chat!.instructions)], {
    input: JSON.stringify(cases),
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  const py = JSON.parse(r.stdout) as {
    schemas: Record<string, unknown>;
    state: unknown;
    errors: Record<string, unknown>[][];
  };
  const ours = { move: actionModel(lake), CallToolAction: actionModel(sql) };
  assert.deepEqual(ours.move.model.schema, py.schemas.move);
  assert.deepEqual(ours.CallToolAction.model.schema, py.schemas.CallToolAction);
  assert.deepEqual(STATE_SCHEMA, py.state);
  cases.forEach(([name, data], i) => {
    let errors: unknown[];
    if (name === 'ListToolsAction') {
      const d = decodeAction(ours.CallToolAction, data);
      errors = 'errors' in d ? d.errors : [];
    } else errors = validate(ours[name as 'move' | 'CallToolAction'].model, data).errors;
    // pydantic's e.json() leaves out a ctx it cannot serialise and writes the url: compare field by field.
    assert.deepEqual(errors, py.errors[i], `${name} ${JSON.stringify(data)}`);
  });
});
