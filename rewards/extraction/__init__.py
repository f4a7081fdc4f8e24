"""Finding the final answer in a model's response (``final_answer.extract_answer``).

``final_answer`` reads the styles (``Answer:`` lines, ``\\boxed{}``, ``<answer>`` tags, free
text); ``markers`` the other endings (``A:``, ``Final Answer:``, refusals); ``free_form`` the
answer of a sentence; ``chunks`` where the math is in free text; ``phrases`` the words that
mark, negate, hedge or join answers. Nothing here evaluates text.
"""
