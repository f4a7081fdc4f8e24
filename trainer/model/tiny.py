"""A tiny Qwen2-architecture model and a character-level tokenizer, both built in code.

This is what ``verimath train`` trains by default: nothing is downloaded, the model has a
few hundred thousand parameters and learns one-digit arithmetic on a laptop CPU in minutes.

The tokenizer is a real :class:`transformers.PreTrainedTokenizerFast` (built with the
``tokenizers`` library): one token per character of printable ASCII plus newline, and
three special tokens, ``<pad>`` (id 0), ``<eos>`` (id 1) and ``<unk>`` (id 2); as in
every Hugging Face tokenizer, text that spells a special token (``"<eos>"``) encodes to it.
It saves and loads with ``save_pretrained``/``from_pretrained`` like any Hugging Face
tokenizer, so a checkpoint of the tiny model is an ordinary Hugging Face model directory.
"""

from __future__ import annotations

import string

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, EOS, UNK)
CHARACTERS = "\n" + "".join(c for c in string.printable if c.isprintable())

# A minimal chat template (user turn, then the assistant's reply); optional.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ 'Q:' + message['content'] + '\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'A:' }}{% endif %}"
)


def make_char_tokenizer(*, chat_template: bool = False):
    """A character-level ``PreTrainedTokenizerFast``.

    Vocabulary: the three special tokens (ids 0, 1, 2) followed by newline and the
    printable ASCII characters, one id each; anything else maps to ``<unk>``. Encoding
    adds no special tokens; decoding concatenates characters with no separator.
    With ``chat_template=True`` the tokenizer carries :data:`CHAT_TEMPLATE`.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + tuple(CHARACTERS))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        eos_token=EOS,
        unk_token=UNK,
        clean_up_tokenization_spaces=False,
    )
    tokenizer.padding_side = "left"  # generation pads on the left
    if chat_template:
        tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def make_tiny_model(
    tokenizer,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    intermediate_size: int | None = None,
    max_positions: int = 128,
    seed: int = 0,
):
    """A randomly initialised ``Qwen2ForCausalLM`` sized for ``tokenizer``.

    ``intermediate_size`` defaults to ``4 * hidden_size``; input and output embeddings are
    tied; two key-value heads (grouped-query attention, as in Qwen2) when ``num_heads`` is
    even. Initialisation draws from a private generator seeded with ``seed``; the global
    torch RNG is restored afterwards.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    if hidden_size % num_heads:
        raise ValueError(
            f"hidden_size ({hidden_size}) must be a multiple of num_heads ({num_heads})"
        )
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or 4 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=2 if num_heads % 2 == 0 else num_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        use_cache=True,
    )
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    finally:
        torch.random.set_rng_state(state)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def count_parameters(model) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters())
