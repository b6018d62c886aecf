/**
 * The environment API users write against, imported as `whetstone` in the editor and bundled
 * into the sandbox with the user's code. Everything here is plain JavaScript with no host access.
 */
export { Rng, hash32 } from './rng';
export { type Json, type ObjectSchema, type ValueSchema, validateValue, schemaToText } from './schema';
export {
  type ToolDefinition,
  type ToolCallParse,
  TOOL_CALL_OPEN,
  TOOL_CALL_CLOSE,
  parseToolCall,
  formatToolResult,
  describeTools,
} from './tools';
export {
  type EpisodeContext,
  type StepResult,
  type ContextPolicy,
  type ToolPromptStyle,
  type SymmetricTurn,
  type Symmetries,
  type Bot,
  type GeneratedTasks,
  type DatasetTasks,
  type TaskSource,
  type EnvironmentSpec,
  type RewardValue,
  type SingleTurnSpec,
  type AgentTurn,
  type MultiAgentStepResult,
  type MultiAgentSpec,
  type EnvironmentKind,
  type EnvironmentDefinition,
  SINGLE_AGENT,
  defineEnvironment,
  defineSingleTurn,
  defineMultiAgentEnvironment,
} from './define';
export { type RewardExpectation, type RewardTestCase, type RewardTests, REWARD_TESTS_FILE, defineRewardTests } from './tests';
