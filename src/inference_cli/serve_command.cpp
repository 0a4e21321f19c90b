// `trafo serve`: checkpoints behind HTTP, one per direction (docs/guide-serving.md).
// SIGTERM and SIGINT stop it: no new connections, the requests in flight are answered (each within
// --request-timeout), then exit 0.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <future>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "decode_flags.h"
#include "trafo/errors.h"
#include "trafo/inference_cli/commands.h"
#include "trafo/serve/http_server.h"
#include "trafo/serve/service.h"

namespace trafo::cli {
namespace {

struct ServeOptions {
  std::vector<std::string> checkpoints;
  inference::RuntimeOptions runtime;  // device, threads, precision for every checkpoint
  inference::SearchOptions decode;
  serve::ServerOptions server;
  int64_t max_queue = 100000;
  int decoders = 0;  // batches decoded side by side on CPU; 0: one per thread
  int64_t cache_sentences = 10000;  // translations kept to answer a sentence asked again; 0: none
  std::string api_keys;
  std::string glossary;  // terms every direction's translations use ("": none); a request's own replace them
};

bool loopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

void check_limits(const ServeOptions& o) {
  const auto& l = o.server.limits;
  auto within = [](const char* name, double value, double low, double high) {
    if (!(value >= low && value <= high)) {
      throw InputError(std::string(name) + " must be from " + std::to_string(static_cast<int64_t>(low)) + " to " +
                       std::to_string(static_cast<int64_t>(high)));
    }
  };
  // An empty address would listen on every interface: reaching beyond loopback is asked for by name.
  if (o.server.host.find_first_not_of(" \t") == std::string::npos) {
    throw InputError("--host is empty: name the address to listen on (127.0.0.1 for this machine only, 0.0.0.0 "
                     "for every interface)");
  }
  within("--port", o.server.port, 0, 65535);
  within("--max-request-bytes", static_cast<double>(l.max_request_bytes), 1024, 1 << 30);
  within("--max-sentences", static_cast<double>(l.max_sentences), 1, 1000000);
  within("--max-line-bytes", static_cast<double>(l.max_line_bytes), 16, 1 << 24);
  within("--max-file-bytes", static_cast<double>(l.max_file_bytes), 1024, 1 << 30);
  within("--max-connections", l.max_connections, 1, 4096);
  within("--max-queue", static_cast<double>(o.max_queue), 1, 100000000);
  within("--max-beam", l.max_beam, 1, 1024);
  within("--decoders", o.decoders, 0, 1024);
  within("--cache-sentences", static_cast<double>(o.cache_sentences), 0, 100000000);
  within("--request-timeout", l.request_seconds, 1, 86400);
  within("--read-timeout", l.read_seconds, 1, 3600);
  if (o.decode.beam > l.max_beam) throw InputError("--beam is above --max-beam");
  inference::validate(o.decode);
}

// Loads each checkpoint as a direction named by the languages it was trained on; a model of several
// target languages (>>xx<< tags) served without --tgt-lang, as one direction per target, sharing the
// model, each putting its target's tag first (a request's "tag" then replaces it).
std::vector<serve::Direction> load_directions(const ServeOptions& o) {
  std::vector<serve::Direction> directions;
  // The glossary's form is checked before a model loads; each model's tokenizer cuts its terms.
  const auto glossary = o.glossary.empty() ? inference::Glossary::File{} : inference::read_glossary(o.glossary);
  for (const auto& path : o.checkpoints) {
    auto runtime = o.runtime;
    runtime.checkpoint = path;
    const auto model = std::make_shared<const inference::LoadedModel>(inference::load_for_translation(runtime));
    const auto& info = model->inference;
    const auto targets = model->required_codes.empty() ? std::vector<std::string>{info.tgt_lang} : model->required_codes;
    if (info.src_lang.empty() || targets.front().empty()) {
      throw InputError("--checkpoint " + path + " does not say which languages it translates (no src_lang and tgt_lang in it)");
    }
    for (const auto& target : targets) {
      for (const auto& d : directions) {
        if (d.source == info.src_lang && d.target == target) {
          throw InputError("two checkpoints translate " + info.src_lang + " to " + target + ": give one per direction");
        }
      }
      serve::Direction each;
      each.source = info.src_lang;
      each.target = target;
      // One engine per direction, sharing the model: the target's tag first where the model has several.
      each.engine = std::make_shared<const inference::Translation>(model, o.decode, glossary,
                                                                   model->required_codes.empty() ? "" : target);
      each.tags = inference::corpus_tag_ids(info, model->tokenizer);
      directions.push_back(std::move(each));
    }
  }
  return directions;
}

int run_serve(ServeOptions& o) {
  // Signals go to one waiting thread: block them before any thread is made (LibTorch's included).
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stops, nullptr);
  signal(SIGPIPE, SIG_IGN);

  check_limits(o);
  if (!o.api_keys.empty()) o.server.api_keys = serve::read_api_keys(o.api_keys);
  auto directions_served = load_directions(o);
  // One thread drives a GPU; on CPU, the decoders share the threads (serve/service.h).
  const bool on_cpu = directions_served.front().engine->loaded().model->parameters().front().device().is_cpu();
  const int decoders = !on_cpu ? 1 : o.decoders > 0 ? o.decoders : at::get_num_threads();
  if (!on_cpu && o.decoders > 1) spdlog::warn("--decoders {} applies on CPU: one decoder drives the GPU", o.decoders);
  serve::Service service(std::move(directions_served), o.max_queue, decoders, o.cache_sentences);
  serve::HttpServer server(service, o.server);
  server.bind();
  std::string directions;
  for (const auto& d : service.directions()) directions += (directions.empty() ? "" : ", ") + d.source + "-" + d.target;
  if (!loopback(o.server.host) && o.server.api_keys.empty()) {
    spdlog::warn("listening on {} without --api-keys: anyone who reaches this machine may translate", o.server.host);
  }
  std::cout << "trafo serve: listening on http://" << o.server.host << ':' << server.port() << " (" << directions << ")"
            << std::endl;

  std::promise<void> served;
  auto done = served.get_future();
  std::thread http([&] {
    server.serve();
    served.set_value();
  });
  // A signal stops the HTTP server, which waits for the requests in flight; then the decoder.
  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stops, &signal_number);
    spdlog::info("{}: no new connections; answering the requests in flight",
                 signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
    server.stop();
    const auto bound =
        std::chrono::duration<double>(o.server.limits.request_seconds + 2 * o.server.limits.read_seconds + 5);
    if (done.wait_for(bound) != std::future_status::ready) {
      // A client that never finishes its request holds its connection; it gets no more time.
      spdlog::warn("connections still open after {:.0f} s: stopping without them", bound.count());
      spdlog::shutdown();
      std::_Exit(0);
    }
    service.stop();
  });
  try {
    service.run_decoder();  // on this thread, which loaded the models
  } catch (const std::exception& error) {
    // Batches fail their requests and decoding goes on; this is a failure outside any batch.
    spdlog::error("decoding stopped: {}", error.what());
    spdlog::shutdown();
    std::_Exit(1);
  }
  stopper.join();
  http.join();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

CommandRunner add_serve_command(CLI::App& app) {
  auto options = std::make_shared<ServeOptions>();
  auto* command = app.add_subcommand(
      "serve", "translate over HTTP: LibreTranslate's API (POST /translate, GET /languages), trafo's own "
               "(POST /v1/translate, POST /v1/score), GET /health and GET /metrics; sentences of concurrent "
               "requests are decoded together");
  command
      ->add_option("--checkpoint,-c", options->checkpoints,
                   "a checkpoint per direction (its training's --src-lang and --tgt-lang name it); repeat for more")
      ->required()
      ->type_name("FILE");
  command->add_option("--host", options->server.host, "the address to listen on; another than loopback is explicit")
      ->capture_default_str();
  command->add_option("--port", options->server.port, "the port; 0: any free one (the start-up line says which)")
      ->capture_default_str();
  command->add_option("--device", options->runtime.device, "cpu, cuda, or auto (cuda when available)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  command->add_option("--threads", options->runtime.threads, "CPU threads for decoding; 0: the cores other processes leave free")
      ->capture_default_str();
  command
      ->add_option("--precision", options->runtime.precision,
                   "fp32, bf16 or auto (fp32 on a CPU, where served text equals offline text whatever the batch; on "
                   "CUDA, bf16 where each model's decoding steps, timed at start, run at least 1.1x as fast)")
      ->check(CLI::IsMember({"fp32", "bf16", "auto"}))
      ->capture_default_str();
  add_decode_flags(*command, options->decode, /*with_n_best=*/false);
  add_language_check_flag(*command, options->decode);
  auto& limits = options->server.limits;
  command->add_option("--max-request-bytes", limits.max_request_bytes, "a larger request body is answered 413")
      ->capture_default_str();
  command->add_option("--max-sentences", limits.max_sentences, "more lines in one request are answered 413")
      ->capture_default_str();
  command->add_option("--max-line-bytes", limits.max_line_bytes, "a longer line is answered 413")->capture_default_str();
  command
      ->add_option("--max-file-bytes", limits.max_file_bytes,
                   "a larger document sent to /translate_file is answered 413 (an archive's entries may unpack to "
                   "at most 512 MiB, in 10,000 entries at most)")
      ->capture_default_str();
  command
      ->add_option("--max-connections", limits.max_connections,
                   "requests that decode worked on at once; as many more wait, and past that a request is answered 503")
      ->capture_default_str();
  command->add_option("--max-queue", options->max_queue, "sentences that may wait for the decoder; past that 503")
      ->capture_default_str();
  command
      ->add_option("--decoders", options->decoders,
                   "batches decoded side by side (CPU), each on a thread of its own: one alone uses every "
                   "--threads, under load the others take one each; 0: one per thread")
      ->capture_default_str();
  command
      ->add_option("--cache-sentences", options->cache_sentences,
                   "translations kept in memory (least recently used leave first): a sentence asked again with "
                   "the same options is answered from them, as decoding would answer it; 0: no cache")
      ->capture_default_str();
  command->add_option("--max-beam", limits.max_beam, "the largest beam (and n-best) a request may ask for")
      ->capture_default_str();
  command
      ->add_option("--request-timeout", limits.request_seconds,
                   "seconds a request may wait for its translations; past that 503")
      ->capture_default_str();
  command->add_option("--read-timeout", limits.read_seconds, "seconds a request has to arrive whole from its connection opening: a silent client is dropped "
                      "then, a half-sent request answered 408")
      ->capture_default_str();
  command->add_option("--glossary", options->glossary,
                      "a file of terms, 'source term<TAB>target term' a line, that every translation uses, as translate "
                      "--glossary; a request's own glossary (native API) replaces it");
  command->add_option("--api-keys", options->api_keys,
                      "a file of keys, one a line: requests but /health and /languages must carry one as api_key "
                      "(403 otherwise)");
  return [options] { return run_serve(*options); };
}

}  // namespace trafo::cli
