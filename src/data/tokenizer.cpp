#include "trafo/data/tokenizer.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <random>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

#include "trafo/errors.h"
#include "trafo/json.h"
#include "trafo/util/base64.h"
#include "trafo/util/language_tag.h"

// SentencePiece samples with a generator of its own per thread (its util.h, which it does not
// install; the library exports it). Seeding it before each draw makes a sentence's sample a
// function of its seed, whichever thread draws it and whatever it drew before.
namespace sentencepiece::random {
std::mt19937* GetRandomGenerator();
}  // namespace sentencepiece::random

namespace trafo::data {
namespace {

// An imported vocabulary's to_bytes(): this line, then JSON with both SentencePiece models (base64)
// and the id table. No SentencePiece model starts so (its first byte is a protobuf tag).
constexpr std::string_view kTableMagic = "trafo-vocabulary-table 1\n";

std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_of(const std::string& model, const char* what) {
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->LoadFromSerializedProto(model);
  if (!status.ok()) throw InputError(std::string("invalid SentencePiece model") + what + ": " + status.ToString());
  return processor;
}

}  // namespace

Tokenizer::Tokenizer(std::string model) : model_(std::move(model)) {
  if (std::string_view(model_).substr(0, kTableMagic.size()) != kTableMagic) {
    processor_ = processor_of(model_, "");
    if (processor_->pad_id() != kPad || processor_->unk_id() != kUnk || processor_->bos_id() != kBos ||
        processor_->eos_id() != kEos) {
      throw InputError("SentencePiece model does not use the ids pad=0 unk=1 bos=2 eos=3");
    }
    return;
  }
  nlohmann::json json;
  try {
    json = parse_json(model_.substr(kTableMagic.size()), "the vocabulary");
    source_model_ = util::from_base64(json.at("source").get<std::string>(), "the vocabulary's source model");
    target_model_ = util::from_base64(json.at("target").get<std::string>(), "the vocabulary's target model");
    table_ = json.at("pieces").get<std::vector<std::string>>();
    if (json.contains("target_pieces")) target_table_ = json.at("target_pieces").get<std::vector<std::string>>();
    start_is_pad_ = json.value("start_is_pad", false);  // absent in tables written before it
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("invalid vocabulary table: ") + e.what());
  }
  if (table_.size() < 4) throw InputError("invalid vocabulary table: fewer than the 4 special pieces");
  if (has_target_table() && target_table_.size() != table_.size()) {
    throw InputError("invalid vocabulary table: the target table's length is not the source table's");
  }
  const auto index = [](const std::vector<std::string>& table, std::unordered_map<std::string, int>& ids) {
    for (size_t id = 0; id < table.size(); ++id) {
      if (!ids.emplace(table[id], static_cast<int>(id)).second) {
        throw InputError("invalid vocabulary table: the piece '" + table[id] + "' is there twice");
      }
    }
  };
  index(table_, table_ids_);
  index(target_table_, target_table_ids_);
  processor_ = processor_of(source_model_, " (source)");
  target_ = processor_of(target_model_, " (target)");
}

void Tokenizer::check_model(const std::string& model, const std::string& name) {
  sentencepiece::SentencePieceProcessor processor;
  const auto status = processor.LoadFromSerializedProto(model);
  if (!status.ok()) throw InputError(name + " is not a valid SentencePiece model: " + status.ToString());
}

Tokenizer Tokenizer::from_table(std::string source_model, std::string target_model, std::vector<std::string> pieces,
                                std::vector<std::string> target_pieces, bool start_is_pad) {
  nlohmann::json json = {{"source", util::to_base64(source_model)},
                         {"target", util::to_base64(target_model)},
                         {"pieces", std::move(pieces)}};
  if (!target_pieces.empty()) json["target_pieces"] = std::move(target_pieces);
  if (start_is_pad) json["start_is_pad"] = true;
  return Tokenizer(std::string(kTableMagic) + json.dump());
}

const std::string& Tokenizer::source_model() const { return has_table() ? source_model_ : model_; }
const std::string& Tokenizer::target_model() const { return has_table() ? target_model_ : model_; }

// MarianMT's tokenizer: a leading language code (">>" up to the first "<<") is one piece, the rest is
// cut by SentencePiece; a piece the table lacks is unk.
std::vector<int> Tokenizer::ids_from_table(const sentencepiece::SentencePieceProcessor& processor,
                                           const std::unordered_map<std::string, int>& table_ids,
                                           std::string_view text, double alpha) const {
  std::vector<int> ids;
  const auto piece_id = [&](const std::string& piece) {
    const auto found = table_ids.find(piece);
    ids.push_back(found == table_ids.end() ? kUnk : found->second);
  };
  if (const auto tag = util::leading_tag(text); !tag.empty()) {
    piece_id(std::string(tag));
    text.remove_prefix(tag.size());
  }
  std::vector<std::string> pieces;
  if (alpha > 0) {
    processor.SampleEncode(text, -1, static_cast<float>(alpha), &pieces).IgnoreError();
  } else {
    processor.Encode(text, &pieces).IgnoreError();
  }
  for (const auto& piece : pieces) piece_id(piece);
  return ids;
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_bytes(const std::string& model) { return Tokenizer(model); }

Tokenizer Tokenizer::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read tokenizer model " + path.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  try {
    return Tokenizer(bytes.str());
  } catch (const InputError& e) {
    throw InputError(path.string() + ": " + e.what());  // which file holds the bad model
  }
}

void Tokenizer::save(const std::filesystem::path& path) const {
  errno = 0;
  std::ofstream out(path, std::ios::binary);
  out << model_;
  out.close();
  if (!out) throw_write_error(path.string(), errno != 0 ? errno : EIO);
}

namespace {

// A leading language code that `tokenizer` reserves (">>fr<< text", as users of multilingual models
// write it): its piece, `rest` then the text after it; -1 and `rest` untouched otherwise. Read as that
// piece and the text cut alone, a code is what a corpus tag puts before a source in training, and
// what MarianMT's tokenizer does with it.
int leading_code(const Tokenizer& tokenizer, std::string_view& rest) {
  const auto tag = util::leading_tag(rest);
  if (tag.empty() || (tag.size() < rest.size() && rest[tag.size()] != ' ' && rest[tag.size()] != '\t')) return -1;
  const int id = tokenizer.reserved_id(std::string(tag));
  if (id >= 0) rest.remove_prefix(tag.size());
  return id;
}

}  // namespace

std::vector<int> Tokenizer::encode(const std::string& text) const {
  if (has_table()) return ids_from_table(*processor_, table_ids_, text);
  std::string_view rest = text;
  const int code = leading_code(*this, rest);
  std::vector<int> ids;
  processor_->Encode(rest, &ids).IgnoreError();
  if (code >= 0) ids.insert(ids.begin(), code);
  return ids;
}

std::vector<int> Tokenizer::encode_target(const std::string& text) const {
  if (!has_table()) {
    std::vector<int> ids;
    processor_->Encode(text, &ids).IgnoreError();
    return ids;
  }
  return ids_from_table(*target_, has_target_table() ? target_table_ids_ : table_ids_, text);
}

namespace {

void seed_sampling(uint64_t seed) {
  sentencepiece::random::GetRandomGenerator()->seed(static_cast<std::mt19937::result_type>(seed ^ (seed >> 32)));
}

}  // namespace

std::vector<int> Tokenizer::sample(const std::string& text, double alpha, uint64_t seed) const {
  seed_sampling(seed);
  if (has_table()) return ids_from_table(*processor_, table_ids_, text, alpha);
  std::string_view rest = text;
  const int code = leading_code(*this, rest);
  std::vector<int> ids;
  processor_->SampleEncode(rest, -1, static_cast<float>(alpha), &ids).IgnoreError();  // -1: the whole lattice
  if (code >= 0) ids.insert(ids.begin(), code);
  return ids;
}

std::vector<int> Tokenizer::sample_target(const std::string& text, double alpha, uint64_t seed) const {
  seed_sampling(seed);
  if (!has_table()) {
    std::vector<int> ids;
    processor_->SampleEncode(text, -1, static_cast<float>(alpha), &ids).IgnoreError();
    return ids;
  }
  return ids_from_table(*target_, has_target_table() ? target_table_ids_ : table_ids_, text, alpha);
}

std::vector<std::string> Tokenizer::pieces(const std::string& text) const {
  std::vector<std::string> result;
  if (has_table()) {
    for (const int id : encode(text)) result.push_back(table_[static_cast<size_t>(id)]);
    return result;
  }
  for (const int id : encode(text)) result.push_back(processor_->IdToPiece(id));
  return result;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (const int id : ids) {
    check_id(id);
    if (id != kPad && id != kBos && id != kEos) kept.push_back(id);
  }
  std::string text;
  if (has_table()) {
    // As MarianMT's tokenizer: the target model joins the pieces, a word-start mark it leaves (in a
    // piece it lacks, one of the source side's) is a space, and spaces at either end go.
    std::vector<std::string> pieces;
    for (const int id : kept) pieces.push_back(target_piece(id));
    target_->Decode(pieces, &text).IgnoreError();
    static const std::string kWordStart = "\xe2\x96\x81";  // U+2581
    for (size_t at = text.find(kWordStart); at != std::string::npos; at = text.find(kWordStart, at + 1)) {
      text.replace(at, kWordStart.size(), " ");
    }
    const auto first = text.find_first_not_of(' ');
    return first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(' ') - first + 1);
  }
  processor_->Decode(kept, &text).IgnoreError();
  return text;
}

std::string Tokenizer::piece(int id) const {
  check_id(id);
  return has_table() ? table_[static_cast<size_t>(id)] : processor_->IdToPiece(id);
}

std::string Tokenizer::target_piece(int id) const {
  check_id(id);
  return has_target_table() ? target_table_[static_cast<size_t>(id)] : piece(id);
}

void Tokenizer::check_id(int id) const {
  // SentencePiece reads out of bounds for such ids; a model with more outputs than its
  // tokenizer has pieces (a mismatched checkpoint) would otherwise crash here.
  if (id < 0 || id >= vocab_size()) {
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                     std::to_string(vocab_size()) + " pieces: the model does not match its tokenizer");
  }
}

int Tokenizer::vocab_size() const {
  return has_table() ? static_cast<int>(table_.size()) : processor_->GetPieceSize();
}

int Tokenizer::reserved_id(const std::string& symbol) const {
  if (has_table()) {  // a language code the table holds: one piece at the start of a line
    const auto ids = encode(symbol);
    return ids.size() == 1 && !util::tag_language(symbol).empty() && ids[0] != kUnk ? ids[0] : -1;
  }
  const int id = processor_->PieceToId(symbol);
  if (id == kUnk || symbol.empty()) return -1;
  // A reserved piece is matched inside text, where a learned one would carry the word-start mark.
  const auto ids = encode("a " + symbol);
  return std::find(ids.begin(), ids.end(), id) != ids.end() ? id : -1;
}

}  // namespace trafo::data
