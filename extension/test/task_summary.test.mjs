// The task list's overall line (popup and tasks page, lib/task_list.js) against the progress it is
// drawn from (lib/tasks.js taskProgress): "n/N pages done" counts over the pages that can be done.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
require("../lib/tasks.js");
require("../lib/task_list.js");

const rated = { "youtube|a": {}, "youtube|b": {}, "youtube|c": {} };
const pageOf = { "youtube|a": "youtube.com/watch?v=one", "youtube|b": "youtube.com/watch?v=one", "youtube|c": "youtube.com/watch?v=two" };

test("every page with a target done: the line says all pages that ask for a number are done", () => {
  // a page with no target asks for no number of ratings: it is never 'done', so it is not one of N
  const tasks = [{ url: "https://www.youtube.com/watch?v=one", target: 2 }, { url: "https://youtu.be/two" }];
  const p = ns.taskProgress(tasks, pageOf, rated);
  assert.equal(p.done, 1);
  const line = ns.taskSummary(p);
  assert.match(line, /^1\/1 page(s)? with a target done · 2\/2 rated$/, line);
});

test("every page with a target: the line as before", () => {
  const tasks = [{ url: "https://www.youtube.com/watch?v=one", target: 2 }, { url: "https://youtu.be/two", target: 3 }];
  assert.equal(ns.taskSummary(ns.taskProgress(tasks, pageOf, rated)), "1/2 pages done · 3/5 rated");
});

test("no page with a target: the comments rated", () => {
  const tasks = [{ url: "https://www.youtube.com/watch?v=one" }, { url: "https://youtu.be/two" }];
  assert.equal(ns.taskSummary(ns.taskProgress(tasks, pageOf, rated)), "3 rated");
});
