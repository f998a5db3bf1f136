"""LongMemEval (xiaowu0162/LongMemEval): everything the harness knows of it."""
