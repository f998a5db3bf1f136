"""Answer prompts, LongMemEval judging, metrics and official-format interop.

Modules: reader_prompt (official reader layout), answer (Actor call), judge + judge_templates (five rule
sets, builtin or read from an official checkout), metrics (micro/macro/abstention, Wilson, paired tests),
official (hypothesis / eval-results files, print_qa_metrics layout).
"""
