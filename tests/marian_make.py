"""Makes a tiny random Hugging Face MarianMT folder, as an OPUS-MT model is laid out, with the real
transformers (PyPI, in .venv): a SentencePiece model per side trained on the given text, one
vocab.json over both (eos 0, unk 1, pad last, decoding from pad), saved by save_pretrained and by
MarianTokenizer's own save. Nothing is downloaded.

    marian_make.py FOLDER SOURCE_TEXT TARGET_TEXT ACTIVATION SEED WEIGHTS [--codes] [--tied] [--separate] [--opus-shape]

WEIGHTS: safetensors or bin (pytorch_model.bin). --codes adds the language codes >>deu<< and >>fra<<
to the vocabulary, as a multilingual OPUS-MT model has them. --tied keeps final_logits_bias zero (the
three matrices are one); otherwise it is random, as OPUS-MT's is, with unk and pad far below the rest
(a trained model never predicts them; CTranslate2, unlike trafo and transformers, does not ban pad).
--separate gives each side its own vocabulary (vocab.json and target_vocab.json, separate_vocabs,
share_encoder_decoder_embeddings false); transformers needs pad's id inside the source vocabulary,
so give it a SEED whose source vocabulary is the longer (5). --opus-shape makes OPUS-MT's size for
benchmarks (bench/marian_finetune.sh): d_model 512, 6+6 layers, 8 heads, d_ff 2048, SentencePiece
models of 8,000 pieces, and the vocabulary filled up to 58,101 pieces with ones no text gives.

The weights are drawn wider than transformers' initialisation, so that the logits of a random model
are far apart and greedy decoding does not hang on ties that float rounding could break either way.
"""

import json
import os
import sys
import tempfile
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import sentencepiece as spm  # noqa: E402
import torch  # noqa: E402
from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer  # noqa: E402

SPECIALS = {"<unk>", "<s>", "</s>", "<pad>"}


def train_spm(text, prefix, seed, size=None):
    spm.SentencePieceTrainer.train(input=text, model_prefix=prefix, vocab_size=size or 250 + 20 * (seed % 3),
                                   hard_vocab_limit=size is None,
                                   model_type="unigram", character_coverage=1.0, minloglevel=2,
                                   num_threads=1)
    return prefix + ".model"


def main():
    warnings.filterwarnings("ignore")
    folder, source_text, target_text, activation, seed, weights = sys.argv[1:7]
    codes, tied, separate, opus = ("--" + flag in sys.argv[7:] for flag in ("codes", "tied", "separate", "opus-shape"))
    seed = int(seed)
    torch.manual_seed(seed)
    work = tempfile.mkdtemp()
    source_spm = train_spm(source_text, os.path.join(work, "source"), seed, 8000 if opus else None)
    target_spm = train_spm(target_text, os.path.join(work, "target"), seed + 1, 8000 if opus else None)

    # OPUS-MT's layout: eos 0, unk 1, the pieces (of both models where the vocabulary is shared), pad last.
    def vocabulary(model_files, with_codes):
        pieces = ["</s>", "<unk>"] + ([">>deu<<", ">>fra<<"] if with_codes else [])
        for model_file in model_files:
            processor = spm.SentencePieceProcessor(model_file=model_file)
            for i in range(processor.get_piece_size()):
                piece = processor.id_to_piece(i)
                if piece not in SPECIALS and piece not in pieces:
                    pieces.append(piece)
        if opus:  # OPUS-MT's 58,101 pieces, pad included
            pieces += [f"\u2581unused{i}" for i in range(58100 - len(pieces))]
        return pieces + ["<pad>"]

    def written(pieces, name):
        path = os.path.join(work, name)
        with open(path, "w", encoding="utf-8") as out:
            json.dump({piece: i for i, piece in enumerate(pieces)}, out, ensure_ascii=False)
        return path

    if separate:
        pieces, target_pieces = vocabulary([source_spm], codes), vocabulary([target_spm], False)
    else:
        pieces = target_pieces = vocabulary([source_spm, target_spm], codes)
    vocab_file = written(pieces, "vocab.json")
    target_vocab_file = written(target_pieces, "target_vocab.json") if separate else None

    size, target_size = len(pieces), len(target_pieces)
    pad = target_size - 1
    d, layers, heads, ffn = (512, 6, 8, 2048) if opus else (32, 2, 4, 64)
    config = MarianConfig(vocab_size=size, decoder_vocab_size=target_size, d_model=d, encoder_layers=layers,
                          decoder_layers=layers, encoder_attention_heads=heads, decoder_attention_heads=heads,
                          encoder_ffn_dim=ffn, decoder_ffn_dim=ffn, activation_function=activation,
                          max_position_embeddings=512 if opus else 1024,
                          pad_token_id=pad, eos_token_id=0, decoder_start_token_id=pad, forced_eos_token_id=0,
                          scale_embedding=True, share_encoder_decoder_embeddings=not separate,
                          tie_word_embeddings=not separate, dropout=0.1)
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "embed_tokens" in name or "shared" in name or "lm_head" in name:
                parameter.normal_(0.0, 1.0)
                parameter[1].zero_()  # unk: never the likeliest piece
            elif parameter.dim() == 2:
                parameter.normal_(0.0, 1.0 / parameter.shape[1] ** 0.5)
            elif parameter.dim() == 1 and name.endswith("bias"):
                parameter.normal_(0.0, 0.1)
        if not tied:
            model.final_logits_bias.normal_(0.0, 1.0)
            model.final_logits_bias[0, 1] = -30.0
            model.final_logits_bias[0, pad] = -30.0  # as in a trained model, pad is never predicted
    model.generation_config = GenerationConfig(decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=0,
                                               pad_token_id=pad, bad_words_ids=[[pad]], num_beams=1,
                                               max_length=1024)
    model.save_pretrained(folder, safe_serialization=weights == "safetensors")
    tokenizer = MarianTokenizer(source_spm, target_spm, vocab_file, target_vocab_file=target_vocab_file,
                                source_lang="en", target_lang="de", separate_vocabs=separate)
    tokenizer.save_pretrained(folder)
    print("ok")


if __name__ == "__main__":
    main()
