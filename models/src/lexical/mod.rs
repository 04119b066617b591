//! LLM-free linking: entity mentions from the graph's names and relation paths scored against the question.
