#include "html_runs.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace trafo::markup::detail {
namespace {

// A run's words, whitespace collapsed, and its tags. Events are word characters and points: the
// whitespace between two events says whether a point stood apart from the words around it.
struct RunText {
  std::string text;
  std::string lead, tail;  // whitespace before the first event and after the last, as written
  std::vector<Mark> marks;

  void add(const Node& node, std::vector<Mark>& into) {
    if (node.kind == Node::Kind::kText) {
      add_text(node.text);
      return;
    }
    Mark mark;
    mark.node = &node;
    mark.order = marks_seen_++;
    mark.point = node.kind != Node::Kind::kElement || is_point(node.name) || is_kept(node);
    mark.begin = text.size();
    if (mark.point) {
      mark.space_before = space_since_event_;
      event();
      mark.point_id = static_cast<int>(space_after_.size());
      space_after_.push_back(false);
      awaiting_ = mark.point_id;
      if (node.kind == Node::Kind::kElement && node.name == "br") space_pending_ = !text.empty();  // it parts words
    } else {
      for (const auto& child : node.children) add(child, mark.children);
    }
    mark.end = mark.point ? mark.begin : text.size();
    into.push_back(std::move(mark));
  }

  // Sets each point's space_after, once the run is read.
  void finish() { set_space_after(marks); }

 private:
  void add_text(std::string_view s) {
    for (const char c : s) {
      if (is_space(c)) {
        (started_ ? tail : lead) += c;
        space_since_event_ = true;
        space_pending_ = !text.empty();
        continue;
      }
      event();
      if (space_pending_) text += ' ';
      space_pending_ = false;
      text += c;
    }
  }

  void event() {
    if (awaiting_ >= 0) space_after_[static_cast<size_t>(awaiting_)] = space_since_event_;
    awaiting_ = -1;
    space_since_event_ = false;
    started_ = true;
    tail.clear();
  }

  void set_space_after(std::vector<Mark>& marks_here) const {
    for (auto& m : marks_here) {
      if (m.point_id >= 0) m.space_after = space_after_[static_cast<size_t>(m.point_id)] != 0;
      set_space_after(m.children);
    }
  }

  bool started_ = false;           // an event seen
  bool space_since_event_ = false;
  bool space_pending_ = false;     // the next word character starts a new word
  int awaiting_ = -1;              // the last point, until the next event
  std::vector<char> space_after_;  // per point
  int marks_seen_ = 0;
};

}  // namespace

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  size_t at = 0;
  while (at < text.size()) {
    const size_t start = text.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    const size_t end = std::min(text.size(), text.find_first_of(" \t", start));
    words.push_back(text.substr(start, end - start));
    at = end;
  }
  return words;
}

namespace {

// Where a run's source marks go among the target words.
class Placement {
 public:
  Placement(const std::string& source, const std::vector<std::string_view>& source_words,
            const std::vector<std::string_view>& target_words, const Links& links)
      : source_(source), n_target_(static_cast<int>(target_words.size())) {
    for (const auto word : target_words) target_sizes_.push_back(word.size());
    for (const auto word : source_words) starts_.push_back(static_cast<size_t>(word.data() - source.data()));
    for (const auto word : source_words) ends_.push_back(static_cast<size_t>(word.data() - source.data()) + word.size());
    targets_.resize(source_words.size());
    linked_.resize(static_cast<size_t>(n_target_));
    for (const auto& [s, t] : links) {
      if (s >= 0 && s < static_cast<int>(targets_.size()) && t >= 0 && t < n_target_) {
        targets_[static_cast<size_t>(s)].push_back(t);
        linked_[static_cast<size_t>(t)] = 1;
      }
    }
  }

  // Target intervals for `marks` and their children, nested and in order within [from, to).
  void place(std::vector<Mark>& marks, int from, int to) const {
    for (auto& m : marks) {
      map(m);
      m.t0 = std::clamp(m.t0, from, to);
      m.t1 = std::clamp(m.t1, m.t0, to);
    }
    std::stable_sort(marks.begin(), marks.end(),
                     [](const Mark& a, const Mark& b) { return a.t0 != b.t0 ? a.t0 < b.t0 : a.order < b.order; });
    // Siblings may not overlap: a tag that runs into the next tag's words ends where they begin,
    // and one that starts where the one before it still runs starts where that one ends.
    int cursor = from;
    for (size_t i = 0; i < marks.size(); ++i) {
      auto& m = marks[i];
      m.t0 = std::max(m.t0, cursor);
      m.t1 = std::max(m.t1, m.t0);
      if (!m.point && i + 1 < marks.size() && !marks[i + 1].point && marks[i + 1].t0 > m.t0 && marks[i + 1].t0 < m.t1) {
        m.t1 = marks[i + 1].t0;
      }
      cursor = m.t1;
      place(m.children, m.t0, m.t1);
    }
  }

 private:
  int n_source() const { return static_cast<int>(starts_.size()); }

  // The source word boundary before character `at`: the number of words that start before it.
  int boundary_at(size_t at) const {
    return static_cast<int>(std::lower_bound(starts_.begin(), starts_.end(), at) - starts_.begin());
  }

  // The target word boundary for source boundary `k`: after the translation of the word before it,
  // or else before that of the word after it, or else at the same share of the sentence.
  int target_boundary(int k) const {
    if (k <= 0) return 0;
    if (k >= n_source()) return n_target_;
    const auto& before = targets_[static_cast<size_t>(k - 1)];
    if (!before.empty()) return *std::max_element(before.begin(), before.end()) + 1;
    const auto& after = targets_[static_cast<size_t>(k)];
    if (!after.empty()) return *std::min_element(after.begin(), after.end());
    return static_cast<int>(std::lround(static_cast<double>(k) * n_target_ / n_source()));
  }

  // source_[from, to) when it is ASCII punctuation only, else "".
  std::string punctuation(size_t from, size_t to) const {
    if (from >= to || to > source_.size()) return "";
    for (size_t i = from; i < to; ++i) {
      if (!std::ispunct(static_cast<unsigned char>(source_[i]))) return "";
    }
    return std::string(source_.substr(from, to - from));
  }

  // The target words [low, high] that a mark over source words [s0, s1) wraps; high -1 for none. Its
  // linked words part into stretches wherever a word linked elsewhere stands between two of them (a
  // word without links does not part them); a tag wraps one stretch, that with the most linked words,
  // of equals the one with the most characters (a function word, such as an auxiliary verb before a
  // participle, is shorter than the word that carries the meaning), never the words linked elsewhere
  // that stand between.
  std::pair<int, int> stretch(int s0, int s1) const {
    std::vector<int> in;
    for (int s = s0; s < s1; ++s) {
      for (const int t : targets_[static_cast<size_t>(s)]) in.push_back(t);
    }
    std::sort(in.begin(), in.end());
    in.erase(std::unique(in.begin(), in.end()), in.end());
    if (in.empty()) return {n_target_, -1};
    size_t best_first = 0, best_count = 0, best_size = 0;
    for (size_t first = 0; first < in.size();) {
      size_t last = first, size = target_sizes_[static_cast<size_t>(in[first])];
      while (last + 1 < in.size() && !linked_between(in[last], in[last + 1])) {
        size += target_sizes_[static_cast<size_t>(in[++last])];
      }
      const size_t count = last - first + 1;
      if (count > best_count || (count == best_count && size > best_size)) {
        best_first = first;
        best_count = count;
        best_size = size;
      }
      first = last + 1;
    }
    return {in[best_first], in[best_first + best_count - 1]};
  }

  // Whether a target word strictly between a and b has links (to words outside the mark: those
  // inside are the mark's own).
  bool linked_between(int a, int b) const {
    for (int t = a + 1; t < b; ++t) {
      if (linked_[static_cast<size_t>(t)] != 0) return true;
    }
    return false;
  }

  void map(Mark& m) const {
    int s0 = boundary_at(m.begin), s1 = s0;
    if (!m.point) {  // the words the mark overlaps
      while (s0 > 0 && ends_[static_cast<size_t>(s0 - 1)] > m.begin) --s0;
      s1 = boundary_at(m.end);
    }
    const auto [low, high] = stretch(s0, s1);
    if (!m.point && s0 < s1) {
      m.lead_out = punctuation(starts_[static_cast<size_t>(s0)], m.begin);
      m.trail_out = punctuation(m.end, ends_[static_cast<size_t>(s1 - 1)]);
    }
    if (high >= 0) {
      m.t0 = low;
      m.t1 = high + 1;
    } else {
      m.t0 = target_boundary(s0);
      m.t1 = std::max(m.t0, target_boundary(s1));
    }
  }

  std::string_view source_;
  int n_target_;
  std::vector<size_t> starts_, ends_;
  std::vector<std::vector<int>> targets_;  // per source word, its linked target words
  std::vector<char> linked_;               // per target word, whether it has a link
  std::vector<size_t> target_sizes_;       // per target word, its bytes
};

// Writes target words with the placed marks between them: a space between two words, before the
// tags that open on a word, and around a point as the source had it.
class RunWriter {
 public:
  RunWriter(std::string& out, const std::vector<std::string_view>& words)
      : out_(out), words_(words), cut_front_(words.size()), cut_back_(words.size()) {}

  void write(const std::vector<Mark>& marks, int from, int to) {
    const int n = static_cast<int>(words_.size());
    int at = from;
    for (const auto& m : marks) {
      write_words(at, m.t0);
      if (m.point) {
        const bool glued_to_word = separator_ == kNeeded && !m.space_before;
        if (separator_ == kNeeded && m.space_before) out_ += ' ';
        detail::write(*m.node, out_);
        // Glued to the word before it, a point does not glue that word to the next.
        separator_ = m.space_after || glued_to_word ? kNeeded : kWritten;
      } else {
        const bool lead = m.t0 < m.t1 && fits(m.lead_out, m.t0, /*front=*/true);
        if (lead) {
          if (separator_ == kNeeded) out_ += ' ';
          escape(m.lead_out, out_, false);
          separator_ = kWritten;
          cut_front_[static_cast<size_t>(m.t0)] = m.lead_out.size();
        }
        if (separator_ == kNeeded && m.t0 < n) {
          out_ += ' ';
          separator_ = kWritten;
        }
        const bool trail = m.t0 < m.t1 && fits(m.trail_out, m.t1 - 1, /*front=*/false);
        if (trail) cut_back_[static_cast<size_t>(m.t1 - 1)] = m.trail_out.size();
        open_tag(*m.node, out_);
        write(m.children, m.t0, m.t1);
        close_tag(*m.node, out_);
        if (trail) {
          escape(m.trail_out, out_, false);
          separator_ = kNeeded;
        }
      }
      at = std::max(at, m.t1);
    }
    write_words(at, to);
  }

 private:
  // Whether target word `w` begins (ends) with `punctuation`, not cut there yet, with more left.
  bool fits(const std::string& punctuation, int w, bool front) const {
    if (punctuation.empty()) return false;
    const auto i = static_cast<size_t>(w);
    const auto word = words_[i].substr(cut_front_[i], words_[i].size() - cut_front_[i] - cut_back_[i]);
    if ((front ? cut_front_[i] : cut_back_[i]) != 0 || word.size() <= punctuation.size()) return false;
    return front ? word.substr(0, punctuation.size()) == punctuation
                 : word.substr(word.size() - punctuation.size()) == punctuation;
  }

  void write_words(int from, int to) {
    for (int w = from; w < to; ++w) {
      const auto i = static_cast<size_t>(w);
      if (separator_ == kNeeded) out_ += ' ';
      escape(words_[i].substr(cut_front_[i], words_[i].size() - cut_front_[i] - cut_back_[i]), out_, false);
      separator_ = kNeeded;
    }
  }

  // What goes before the next word: nothing at the start or after a separator written (kWritten), a
  // space after a word (kNeeded).
  enum Separator { kWritten, kNeeded };

  std::string& out_;
  const std::vector<std::string_view>& words_;
  std::vector<size_t> cut_front_, cut_back_;  // characters of each word written outside a tag
  Separator separator_ = kWritten;
};

}  // namespace

Run read_run(const std::vector<Node>& nodes, size_t from, size_t to) {
  RunText reader;
  for (size_t i = from; i < to; ++i) reader.add(nodes[i], reader.marks);
  reader.finish();
  return Run{std::move(reader.text), std::move(reader.lead), std::move(reader.tail), std::move(reader.marks)};
}

void write_run(Run& run, std::string_view translation, const Links& links, std::string& out) {
  const auto source_words = split_words(run.text);
  const auto target_words = split_words(translation);
  const int n_target = static_cast<int>(target_words.size());
  Placement(run.text, source_words, target_words, links).place(run.marks, 0, n_target);
  out += run.lead;
  RunWriter(out, target_words).write(run.marks, 0, n_target);
  out += run.tail;
}

}  // namespace trafo::markup::detail
