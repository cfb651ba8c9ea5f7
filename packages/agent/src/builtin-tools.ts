import { quotedEcho } from "./echo.js";
import { kindOf } from "./errors.js";
import { cutText } from "./messages.js";
import { ownFields, setting } from "./own.js";
import type { Todo, TodoStatus } from "./session-file.js";
import type { AgentTool } from "./tools.js";

/** One question the model asks with `AskUser`. */
export interface AskQuestion {
  /** A short label (≤ 12 characters) for a UI. */
  header?: string;
  question: string;
  /** 2–4 choices. */
  options: { label: string; description?: string }[];
  /** Several options may be picked (the answer is a list). */
  multiSelect: boolean;
}

/** An answer: one label, several labels for a multi-select question, "" when skipped. */
export type AskAnswer = string | string[];

/** A question as the timeline holds it: `answer` is null until answered. */
export interface AskedQuestion extends AskQuestion {
  answer: AskAnswer | null;
}

function fail(message: string): never {
  throw new Error(message);
}

/**
 * Reads AskUser's arguments; throws an error the model reads, naming what was wrong. Two questions
 * of one call with the same text (trimmed) are refused: the answers come back keyed by the text,
 * and one would be lost.
 */
export function readQuestions(args: Record<string, unknown>): AskQuestion[] {
  // Every field the model's own (parsed JSON, so a plain object's), never a polluted
  // Object.prototype's: an inherited `multiSelect = true` made every question a multi-select.
  const list = setting(args, "questions");
  if (!Array.isArray(list) || list.length < 1 || list.length > 4) {
    fail("AskUser takes `questions`: a list of 1 to 4 questions.");
  }
  const texts: string[] = [];
  return list.map((raw: unknown, at) => {
    const q = ownFields(Object(raw ?? {}), ["question", "header", "options", "multiSelect"]) as Record<
      string,
      unknown
    >;
    if (typeof q.question !== "string" || q.question.trim() === "")
      fail(`questions[${at}].question must be non-empty text.`);
    const before = texts.indexOf(q.question.trim());
    if (before >= 0) {
      fail(
        `questions[${at}].question repeats questions[${before}]'s text (${JSON.stringify(q.question.trim())}); the answers come back keyed by the question's text, so each question needs its own. Put what tells them apart${typeof q.header === "string" && q.header.trim() !== "" ? ` (such as "${q.header.trim()}")` : ""} into the question, and ask again.`,
      );
    }
    texts.push(q.question.trim());
    const options = q.options;
    if (!Array.isArray(options) || options.length < 2 || options.length > 4) {
      fail(`questions[${at}].options must list 2 to 4 options.`);
    }
    const read = options.map((o: unknown, i) => {
      const opt = ownFields(Object(typeof o === "string" ? { label: o } : (o ?? {})), [
        "label",
        "description",
      ]) as Record<string, unknown>;
      if (typeof opt.label !== "string" || opt.label === "")
        fail(`questions[${at}].options[${i}].label must be text.`);
      return {
        label: opt.label,
        ...(typeof opt.description === "string" ? { description: opt.description } : {}),
      };
    });
    return {
      ...(typeof q.header === "string" ? { header: cutText(q.header, 12) } : {}),
      question: q.question,
      options: read,
      multiSelect: q.multiSelect === true,
    };
  });
}

/** The AskUser tool: asks the user 1–4 questions through `ask`, which resolves with one answer each. */
export function askUserTool(
  ask: (questions: AskQuestion[], signal?: AbortSignal) => Promise<AskAnswer[]>,
): AgentTool {
  return {
    name: "AskUser",
    description:
      "Ask the user 1-4 questions in one call, each with 2-4 options (multiSelect to allow several), and wait for the answers. Use it when a choice is the user's to make.",
    parameters: {
      type: "object",
      properties: {
        questions: {
          type: "array",
          minItems: 1,
          maxItems: 4,
          items: {
            type: "object",
            properties: {
              header: { type: "string", description: "A short label, at most 12 characters." },
              question: { type: "string" },
              options: {
                type: "array",
                minItems: 2,
                maxItems: 4,
                items: {
                  type: "object",
                  properties: { label: { type: "string" }, description: { type: "string" } },
                  required: ["label"],
                },
              },
              multiSelect: { type: "boolean" },
            },
            required: ["question", "options"],
          },
        },
      },
      required: ["questions"],
    },
    executionMode: "sequential",
    async execute(args, { signal }) {
      const questions = readQuestions(args);
      const answers = await ask(questions, signal);
      return JSON.stringify(Object.fromEntries(questions.map((q, i) => [q.question, answers[i] ?? ""])));
    },
  };
}

const STATUSES: readonly TodoStatus[] = ["pending", "inProgress", "completed"];

/** Reads TodoWrite's arguments; throws an error the model reads, naming what was wrong. */
export function readTodos(args: Record<string, unknown>): Todo[] {
  const list = setting(args, "todos");
  if (!Array.isArray(list)) fail("TodoWrite takes `todos`: the whole list, each { content, status }.");
  return list.map((raw: unknown, at) => {
    const t = ownFields(Object(raw ?? {}), ["content", "status"]) as Record<string, unknown>;
    if (typeof t.content !== "string" || t.content.trim() === "")
      fail(`todos[${at}].content must be non-empty text.`);
    // Normalise the spellings models use for the middle state.
    const status = t.status === "in_progress" || t.status === "in-progress" ? "inProgress" : t.status;
    if (!STATUSES.includes(status as TodoStatus)) {
      fail(
        `todos[${at}].status must be one of ${STATUSES.join(", ")}; got ${typeof t.status === "string" ? quotedEcho(t.status) : kindOf(t.status)}.`,
      );
    }
    return { content: t.content.trim(), status: status as TodoStatus };
  });
}

/** The TodoWrite tool: replaces the session's todo list through `write`. */
export function todoWriteTool(write: (todos: Todo[]) => void): AgentTool {
  return {
    name: "TodoWrite",
    description:
      "Replace the task list for multi-step work. Send the whole list each time; mark one item inProgress while working on it and completed when done. Finish every item before the final reply.",
    parameters: {
      type: "object",
      properties: {
        todos: {
          type: "array",
          items: {
            type: "object",
            properties: {
              content: { type: "string" },
              status: { type: "string", enum: [...STATUSES] },
            },
            required: ["content", "status"],
          },
        },
      },
      required: ["todos"],
    },
    executionMode: "sequential",
    execute(args) {
      const todos = readTodos(args);
      write(todos);
      const count = (s: TodoStatus) => todos.filter((t) => t.status === s).length;
      return `Todo list saved: ${todos.length} item(s), ${count("completed")} completed, ${count("inProgress")} in progress, ${count("pending")} pending.`;
    },
  };
}
