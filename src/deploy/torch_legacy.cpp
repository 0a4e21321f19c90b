#include "torch_legacy.h"

#include <cstring>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include <torch/torch.h>

#include "trafo/errors.h"

namespace trafo::deploy {
namespace {

// The pickled magic number 0x1950a86a20f9469cfc6c (protocol 2, LONG1 of 10 bytes).
constexpr char kMagic[] = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;

struct Value;
using ValuePtr = std::shared_ptr<Value>;

// A storage as its persistent id names it, and a tensor as _rebuild_tensor_v2's arguments give it.
struct StorageRef {
  std::string key;
  at::ScalarType type;
};
struct TensorRef {
  StorageRef storage;
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};
// What the restricted unpickler builds. A global is only ever one of the few names below.
struct Global {
  std::string name;  // "module.name"
};
struct Mark {};
using List = std::vector<ValuePtr>;
using Dict = std::vector<std::pair<ValuePtr, ValuePtr>>;  // insertion order, as OrderedDict's

struct Value {
  std::variant<std::monostate, bool, int64_t, double, std::string, List, Dict, Global, StorageRef, TensorRef, Mark>
      data;
  bool tuple = false;  // a List read as a tuple
};

// The storage classes a state dict's tensors are made of.
std::optional<at::ScalarType> storage_type(const std::string& name) {
  static const std::pair<const char*, at::ScalarType> kTypes[] = {
      {"torch.FloatStorage", at::kFloat}, {"torch.DoubleStorage", at::kDouble}, {"torch.HalfStorage", at::kHalf},
      {"torch.BFloat16Storage", at::kBFloat16}, {"torch.LongStorage", at::kLong}, {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort}, {"torch.CharStorage", at::kChar}, {"torch.ByteStorage", at::kByte},
      {"torch.BoolStorage", at::kBool}};
  for (const auto& [known, type] : kTypes) {
    if (name == known) return type;
  }
  return std::nullopt;
}

bool allowed_global(const std::string& name) {
  return name == "collections.OrderedDict" || name == "torch._utils._rebuild_tensor_v2" ||
         name == "torch._utils._rebuild_parameter" || storage_type(name).has_value();
}

class Unpickler {
 public:
  Unpickler(const std::string& bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  // A pickle can put a list inside itself (through the memo): emptying every value made breaks such
  // cycles, which shared pointers alone would leak.
  ~Unpickler() {
    for (auto& value : made_) value->data = std::monostate{};
  }
  Unpickler(const Unpickler&) = delete;
  Unpickler& operator=(const Unpickler&) = delete;

  // The next pickle's value, from the current position to its STOP.
  ValuePtr load() {
    stack_.clear();
    memo_.clear();
    while (true) {
      const auto op = static_cast<unsigned char>(byte());
      switch (op) {
        case 0x80: byte(); break;  // PROTO
        case 0x95: take(8); break; // FRAME (protocol 4)
        case '.': {                // STOP
          auto value = pop();
          return value;
        }
        case 'N': push(make(std::monostate{})); break;
        case 0x88: push(make(true)); break;
        case 0x89: push(make(false)); break;
        case 'K': push(make(static_cast<int64_t>(static_cast<unsigned char>(byte())))); break;
        case 'M': push(make(static_cast<int64_t>(unsigned_le(2)))); break;
        case 'J': push(make(static_cast<int64_t>(static_cast<int32_t>(unsigned_le(4))))); break;
        case 0x8a: push(make(long1(static_cast<unsigned char>(byte())))); break;  // LONG1
        case 'G': {  // BINFLOAT, big-endian
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<unsigned char>(byte());
          double value;
          std::memcpy(&value, &bits, sizeof value);
          push(make(value));
          break;
        }
        case 'X': push(make(take(unsigned_le(4)))); break;                               // BINUNICODE
        case 0x8c: push(make(take(static_cast<unsigned char>(byte())))); break;          // SHORT_BINUNICODE
        case 'T': push(make(take(unsigned_le(4)))); break;                               // BINSTRING
        case 'U': push(make(take(static_cast<unsigned char>(byte())))); break;           // SHORT_BINSTRING
        case 'q': memo_put(static_cast<unsigned char>(byte())); break;                   // BINPUT
        case 'r': memo_put(unsigned_le(4)); break;                                       // LONG_BINPUT
        case 0x94: memo_put(memo_.size()); break;                                        // MEMOIZE
        case 'h': push(memo_get(static_cast<unsigned char>(byte()))); break;             // BINGET
        case 'j': push(memo_get(unsigned_le(4))); break;                                 // LONG_BINGET
        case '}': push(make(Dict{})); break;
        case ']': push(make(List{})); break;
        case ')': push(make(List{}, /*tuple=*/true)); break;
        case '(': push(make(Mark{})); break;
        case 't': push(make(pop_to_mark(), /*tuple=*/true)); break;
        case 'l': push(make(pop_to_mark())); break;
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
          List items(op - 0x84);
          for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
          push(make(std::move(items), /*tuple=*/true));
          break;
        }
        case 'a': {  // APPEND
          auto item = pop();
          list_of(top()).push_back(std::move(item));
          break;
        }
        case 'e': {  // APPENDS
          auto items = pop_to_mark();
          auto& list = list_of(top());
          list.insert(list.end(), items.begin(), items.end());
          break;
        }
        case 'd': {  // DICT
          auto items = pop_to_mark();
          push(make(pairs(items)));
          break;
        }
        case 's': {  // SETITEM
          auto value = pop();
          auto key = pop();
          dict_of(top()).emplace_back(std::move(key), std::move(value));
          break;
        }
        case 'u': {  // SETITEMS
          auto items = pop_to_mark();
          auto& dict = dict_of(top());
          for (auto& pair : pairs(items)) dict.push_back(std::move(pair));
          break;
        }
        case 'c': {  // GLOBAL: "module\nname\n"
          auto module = line();
          auto name = module + "." + line();
          if (!allowed_global(name)) fail("it names the class " + name + ", which no plain state dict holds");
          push(make(Global{name}));
          break;
        }
        case 'R': {  // REDUCE
          auto arguments = pop();
          auto callable = pop();
          push(reduce(*callable, *arguments));
          break;
        }
        case 'b': pop(); break;  // BUILD: an OrderedDict's attributes (its _metadata), not needed
        case 'Q': push(persistent(*pop())); break;  // BINPERSID
        default: fail("it holds pickle opcode " + std::to_string(op) + ", which no plain state dict needs");
      }
    }
  }

  size_t position() const { return at_; }
  void skip(size_t count) { take(count); }
  const char* here() const { return bytes_.data() + at_; }
  uint64_t unsigned_le(int count) {
    const auto text = take(static_cast<size_t>(count));
    uint64_t value = 0;
    for (int i = count - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(text[static_cast<size_t>(i)]);
    return value;
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(path_ + " is not a plain state dict: " + why);
  }

 private:
  char byte() { return take(1)[0]; }
  std::string take(size_t count) {
    if (count > bytes_.size() - at_) fail("it ends early (truncated)");
    auto text = bytes_.substr(at_, count);
    at_ += count;
    return text;
  }
  std::string line() {
    const auto end = bytes_.find('\n', at_);
    if (end == std::string::npos) fail("it ends early (truncated)");
    auto text = bytes_.substr(at_, end - at_);
    at_ = end + 1;
    return text;
  }
  int64_t long1(size_t count) {
    if (count > 8) fail("it holds an integer of more than 64 bits");
    const auto text = take(count);
    uint64_t value = 0;
    for (size_t i = count; i-- > 0;) value = (value << 8) | static_cast<unsigned char>(text[i]);
    if (count > 0 && count < 8 && (static_cast<unsigned char>(text[count - 1]) & 0x80)) value |= ~uint64_t{0} << (8 * count);
    return static_cast<int64_t>(value);
  }

  void push(ValuePtr value) { stack_.push_back(std::move(value)); }
  ValuePtr pop() {
    if (stack_.empty()) fail("its pickle pops an empty stack");
    auto value = std::move(stack_.back());
    stack_.pop_back();
    return value;
  }
  ValuePtr& top() {
    if (stack_.empty()) fail("its pickle reads an empty stack");
    return stack_.back();
  }
  List pop_to_mark() {
    List items;
    while (true) {
      auto value = pop();
      if (std::holds_alternative<Mark>(value->data)) break;
      items.push_back(std::move(value));
    }
    return {items.rbegin(), items.rend()};
  }
  Dict pairs(const List& items) {
    if (items.size() % 2 != 0) fail("its pickle has a key without a value");
    Dict dict;
    for (size_t i = 0; i < items.size(); i += 2) dict.emplace_back(items[i], items[i + 1]);
    return dict;
  }
  List& list_of(ValuePtr& value) {
    if (auto* list = std::get_if<List>(&value->data)) return *list;
    fail("its pickle appends to what is no list");
  }
  Dict& dict_of(ValuePtr& value) {
    if (auto* dict = std::get_if<Dict>(&value->data)) return *dict;
    fail("its pickle sets an item of what is no dict");
  }
  ValuePtr make(decltype(Value::data) data, bool tuple = false) {
    auto value = std::make_shared<Value>();
    value->data = std::move(data);
    value->tuple = tuple;
    made_.push_back(value);
    return value;
  }
  // Python's pickler numbers memo entries 0, 1, 2, ...: an index past the next is refused, which
  // bounds the memo by the file's size.
  void memo_put(size_t index) {
    if (index > memo_.size()) fail("its pickle skips memo entries");
    if (index == memo_.size()) memo_.emplace_back();
    memo_[index] = top();
  }
  ValuePtr memo_get(size_t index) {
    if (index >= memo_.size() || !memo_[index]) fail("its pickle reads a memo entry it never wrote");
    return memo_[index];
  }

  int64_t integer(const ValuePtr& value) {
    if (const auto* number = std::get_if<int64_t>(&value->data)) return *number;
    fail("a tensor's shape is not integers");
  }
  std::vector<int64_t> integers(const ValuePtr& value) {
    const auto* items = std::get_if<List>(&value->data);
    if (items == nullptr) fail("a tensor's shape is no tuple");
    std::vector<int64_t> numbers;
    for (const auto& item : *items) numbers.push_back(integer(item));
    return numbers;
  }

  ValuePtr reduce(const Value& callable, const Value& arguments) {
    const auto* global = std::get_if<Global>(&callable.data);
    const auto* args = std::get_if<List>(&arguments.data);
    if (global == nullptr || args == nullptr) fail("its pickle calls what is no known function");
    if (global->name == "collections.OrderedDict") return make(Dict{});
    if (global->name == "torch._utils._rebuild_parameter") {  // (tensor, requires_grad, hooks)
      if (args->empty() || !std::holds_alternative<TensorRef>((*args)[0]->data)) fail("a parameter holds no tensor");
      return (*args)[0];
    }
    if (global->name == "torch._utils._rebuild_tensor_v2" && args->size() >= 4) {  // (storage, offset, size, stride, ...)
      const auto* storage = std::get_if<StorageRef>(&(*args)[0]->data);
      if (storage == nullptr) fail("a tensor is made of no storage");
      TensorRef tensor{*storage, integer((*args)[1]), integers((*args)[2]), integers((*args)[3])};
      if (tensor.sizes.size() != tensor.strides.size()) fail("a tensor's size and stride differ in length");
      return make(tensor);
    }
    fail("its pickle calls " + global->name + " as no plain state dict does");
  }

  // ('storage', storage class, key, location, element count[, view])
  ValuePtr persistent(const Value& id) {
    const auto* fields = std::get_if<List>(&id.data);
    if (fields == nullptr || fields->size() < 5) fail("a persistent id is not a storage's");
    const auto* kind = std::get_if<std::string>(&(*fields)[0]->data);
    const auto* type = std::get_if<Global>(&(*fields)[1]->data);
    const auto* key = std::get_if<std::string>(&(*fields)[2]->data);
    if (kind == nullptr || *kind != "storage" || type == nullptr || key == nullptr || !storage_type(type->name)) {
      fail("a persistent id is not a storage's");
    }
    const auto storage = StorageRef{*key, *storage_type(type->name)};
    storage_types[storage.key] = storage.type;
    return make(storage);
  }

 public:
  std::map<std::string, at::ScalarType> storage_types;  // every storage a persistent id named

 private:

  const std::string& bytes_;
  const std::string& path_;
  size_t at_ = 0;
  std::vector<ValuePtr> stack_, memo_, made_;
};

}  // namespace

bool is_legacy_torch_save(const std::string& bytes) { return bytes.compare(0, kMagicSize, kMagic, kMagicSize) == 0; }

std::map<std::string, at::Tensor> read_legacy_state_dict(const std::string& bytes, const std::string& path) {
  Unpickler unpickler(bytes, path);
  if (!is_legacy_torch_save(bytes)) unpickler.fail("it does not start with torch.save's magic number");
  unpickler.skip(kMagicSize);  // the magic number, a 10-byte integer
  if (unpickler.here()[0] != '.') unpickler.fail("its magic number is not followed by STOP");
  unpickler.skip(1);
  const auto version = unpickler.load();
  if (const auto* number = std::get_if<int64_t>(&version->data); number == nullptr || *number != 1001) {
    unpickler.fail("its format version is not 1001");
  }
  unpickler.load();  // the writer's sizes (little-endian is checked by the storages' element counts)
  const auto object = unpickler.load();
  const auto keys = unpickler.load();

  // Each storage, in the order of `keys`: its element count (8 bytes, little-endian), then its bytes.
  const auto* key_list = std::get_if<List>(&keys->data);
  if (key_list == nullptr) unpickler.fail("its storages' keys are no list");
  const auto* dict = std::get_if<Dict>(&object->data);
  if (dict == nullptr) unpickler.fail("it holds no dict of tensors");
  const auto& types = unpickler.storage_types;
  std::map<std::string, at::Tensor> storages;
  for (const auto& key_value : *key_list) {
    const auto* key = std::get_if<std::string>(&key_value->data);
    if (key == nullptr) unpickler.fail("a storage's key is no string");
    const auto type_found = types.find(*key);
    if (type_found == types.end()) unpickler.fail("it stores a storage no tensor names");
    const auto type = type_found->second;
    const auto count = unpickler.unsigned_le(8);
    const auto element = c10::elementSize(type);
    if (count > (bytes.size() - unpickler.position()) / element) unpickler.fail("it ends early (truncated)");
    const auto size = static_cast<int64_t>(count);
    storages[*key] = torch::from_blob(const_cast<char*>(unpickler.here()), {size}, torch::TensorOptions().dtype(type)).clone();
    unpickler.skip(count * element);
  }

  std::map<std::string, at::Tensor> weights;
  for (const auto& [key, value] : *dict) {
    const auto* name = std::get_if<std::string>(&key->data);
    const auto* tensor = std::get_if<TensorRef>(&value->data);
    if (name == nullptr || tensor == nullptr) continue;  // not a weight
    const auto found = storages.find(tensor->storage.key);
    if (found == storages.end()) unpickler.fail("the tensor " + *name + "'s storage is missing");
    // The view must lie inside its storage: its last element's index below the element count.
    const int64_t elements = found->second.numel();
    bool empty = false;
    int64_t last = tensor->offset;
    for (size_t i = 0; i < tensor->sizes.size(); ++i) {
      const int64_t size = tensor->sizes[i], stride = tensor->strides[i];
      if (size < 0 || stride < 0) unpickler.fail("the tensor " + *name + " has a negative shape");
      empty = empty || size == 0;
      if (size > 1 && stride > 0 && (size - 1) > (elements - last) / stride) last = elements;  // past the end
      else if (size > 1) last += (size - 1) * stride;
    }
    if (tensor->offset < 0 || (!empty && last >= elements)) {
      unpickler.fail("the tensor " + *name + " lies outside its storage");
    }
    weights[*name] = found->second.as_strided(tensor->sizes, tensor->strides, tensor->offset);
  }
  return weights;
}

}  // namespace trafo::deploy
