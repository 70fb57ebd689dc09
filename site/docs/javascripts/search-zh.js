/* Chinese search: the index holds Chinese text cut into words at build time (jieba, separated by
   zero-width spaces). A query such as 显存瓶颈 has no spaces, so it is cut here with the index's own
   words (search/zh-words.json, written by site/hooks.py from the built index): the cut with the
   fewest pieces that leaves the fewest characters outside any indexed word. The browser's own
   segmenter is not used: Chromium without ICU's Chinese dictionary splits 显存 into 显 / 存.

   Material's search worker cuts every run of Han characters again (an "experimental" segmentation
   that never tries the whole run, so 显存 becomes 显* 存* whenever 显 is a word of the index).
   Each word is therefore sent as its characters joined by wildcards, 显*存*: runs of one character
   pass that step untouched, and Lunr matches 显*存* against the indexed word 显存 (and any word that
   starts with 显 and continues with 存). A query of several words requires all of them (+), so every
   result holds every word: the results' "missing" terms are relabelled from 显*存* to 显存, found.
   No network, no library. */
(function () {
  "use strict";
  if (typeof Worker === "undefined") {
    return;
  }
  var han = /[\u3400-\u9fff\uf900-\ufaff]+/g;
  var longest = 1;
  var words = null; // the index's Chinese words, once loaded

  function base() {
    var config = document.getElementById("__config");
    try {
      return new URL(JSON.parse(config.textContent).base + "/", location.href);
    } catch (error) {
      return new URL("./", location.href);
    }
  }

  function load() {
    fetch(new URL("search/zh-words.json", base()))
      .then(function (response) { return response.ok ? response.json() : []; })
      .then(function (list) {
        words = new Set(list);
        list.forEach(function (word) { longest = Math.max(longest, word.length); });
      })
      .catch(function () { words = new Set(); });
  }
  // loaded in the page's head (site/overrides/main.html), before Material's bundle starts its worker
  document.addEventListener("DOMContentLoaded", load);

  /* The cut of `run` into indexed words: fewest characters outside words, then fewest pieces. A
     character in no word stays a piece of its own. */
  function cut(run) {
    if (!words) {
      return [run];  // the words are still on their way: the run as one word
    }
    var best = [{ missed: 0, pieces: 0, from: -1 }];
    for (var end = 1; end <= run.length; end++) {
      var choice = null;
      for (var start = Math.max(0, end - longest); start < end; start++) {
        var piece = run.slice(start, end);
        var known = words.has(piece);
        if (!known && end - start > 1) {
          continue;
        }
        var missed = best[start].missed + (known ? 0 : 1);
        var pieces = best[start].pieces + 1;
        if (!choice || missed < choice.missed || (missed === choice.missed && pieces < choice.pieces)) {
          choice = { missed: missed, pieces: pieces, from: start };
        }
      }
      best.push(choice);
    }
    var out = [];
    for (var at = run.length; at > 0; at = best[at].from) {
      out.unshift(run.slice(best[at].from, at));
    }
    return out;
  }

  function guard(word) {
    return word.split("").join("*") + "*";
  }

  function segment(query) {
    var pieces = [];
    var chinese = 0;
    query.trim().split(/\s+/).forEach(function (part) {
      var last = 0;
      part.replace(han, function (run, offset) {
        if (offset > last) {
          pieces.push(part.slice(last, offset));
        }
        cut(run).forEach(function (word) {
          pieces.push(guard(word));
          chinese += 1;
        });
        last = offset + run.length;
        return run;
      });
      if (last < part.length) {
        pieces.push(part.slice(last));
      }
    });
    if (pieces.length > 1 && chinese > 0) {  // several words: each one is required
      return pieces.map(function (piece) { return /^[+\-]/.test(piece) ? piece : "+" + piece; }).join(" ");
    }
    return pieces.join(" ");
  }

  var post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message) {
    // Material's search worker protocol: {type: 2, data: "<query>"} is a query
    han.lastIndex = 0;
    if (message && message.type === 2 && typeof message.data === "string" && han.test(message.data)) {
      han.lastIndex = 0;
      var args = Array.prototype.slice.call(arguments);
      args[0] = Object.assign({}, message, { data: segment(message.data) });
      return post.apply(this, args);
    }
    han.lastIndex = 0;
    return post.apply(this, arguments);
  };

  /* Results come back as {type: 3, data: {items: [[item, ...], ...]}}, each item with `terms`: the
     query's terms and whether the item holds each (Material compares them as prefixes, which a
     wildcard never is). Every result holds every word we sent: say so, in the words themselves. */
  function relabel(data) {
    if (!data || data.type !== 3 || !data.data || !Array.isArray(data.data.items)) {
      return data;
    }
    var items = data.data.items.map(function (group) {
      return group.map(function (item) {
        if (!item.terms) {
          return item;
        }
        var terms = {};
        Object.keys(item.terms).forEach(function (term) {
          if (term.indexOf("*") >= 0 && han.test(term)) {
            terms[term.replace(/\*/g, "")] = true;
          } else {
            terms[term] = item.terms[term];
          }
          han.lastIndex = 0;
        });
        return Object.assign({}, item, { terms: terms });
      });
    });
    return Object.assign({}, data, { data: Object.assign({}, data.data, { items: items }) });
  }

  var wrapped = new WeakMap();
  var listen = Worker.prototype.addEventListener;
  var unlisten = Worker.prototype.removeEventListener;
  Worker.prototype.addEventListener = function (type, listener, options) {
    if (type !== "message" || typeof listener !== "function") {
      return listen.apply(this, arguments);
    }
    if (!wrapped.has(listener)) {
      wrapped.set(listener, function (event) {
        var data = relabel(event.data);
        return listener.call(this, data === event.data ? event : new MessageEvent("message", { data: data }));
      });
    }
    return listen.call(this, type, wrapped.get(listener), options);
  };
  Worker.prototype.removeEventListener = function (type, listener, options) {
    var inner = typeof listener === "function" && wrapped.get(listener);
    return unlisten.call(this, type, inner || listener, options);
  };
  window.gpukbSegmentQuery = segment;
})();
