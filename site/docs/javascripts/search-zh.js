/* Chinese search: the index holds Chinese text cut into words (jieba, at build time, separated by
   zero-width spaces). A query such as 显存瓶颈 has no spaces, so before it reaches Material's search
   worker its Chinese runs are cut into words the same way with the browser's own segmenter
   (Intl.Segmenter), and each word is searched: 显存 瓶颈. No network, no library. */
(function () {
  "use strict";
  if (typeof Intl === "undefined" || typeof Intl.Segmenter !== "function" || typeof Worker === "undefined") {
    return;
  }
  var segmenter = new Intl.Segmenter("zh", { granularity: "word" });
  var han = /[\u3400-\u9fff\uf900-\ufaff]+/g;

  function segment(query) {
    return query.replace(han, function (run) {
      var words = [];
      for (var part of segmenter.segment(run)) {
        if (part.isWordLike !== false && part.segment.trim()) {
          words.push(part.segment);
        }
      }
      return " " + words.join(" ") + " ";
    }).replace(/\s+/g, " ").trim();
  }

  var post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message) {
    // Material's search worker protocol: {type: 2, data: "<query>"} is a query
    if (message && message.type === 2 && typeof message.data === "string" && han.test(message.data)) {
      han.lastIndex = 0;
      var args = Array.prototype.slice.call(arguments);
      args[0] = Object.assign({}, message, { data: segment(message.data) });
      return post.apply(this, args);
    }
    han.lastIndex = 0;
    return post.apply(this, arguments);
  };
  window.gpukbSegmentQuery = segment;
})();
