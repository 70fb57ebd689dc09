/* The ask page (ask/, zh/ask/): a form whose answer is looked up in the answers ask() gave when the site
   was built (gpukb.site.askdata), one file per model and task, loaded when asked. The question lives in
   the page's query string under the workload's field names. Every word comes from data/index.json in
   the page's language; every text is inserted as text (textContent), never as markup. */
(function () {
  "use strict";
  var root = document.getElementById("gpukb-ask");
  if (!root) return;
  var SLUG = /^[a-z0-9][a-z0-9._-]{0,79}$/;
  var base = new URL(root.getAttribute("data-index") || "data/index.json", location.href);
  var files = {};  // data path -> a promise of its JSON
  var index = null;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) { node.setAttribute(name, attrs[name]); });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (all, name) { return name in values ? String(values[name]) : all; });
  }
  function fetchJson(url) {
    if (!files[url]) {
      files[url] = fetch(url).then(function (r) {
        if (!r.ok) throw new Error(r.status + " " + r.statusText);
        return r.json();
      });
    }
    return files[url];
  }
  function names(list) {
    var out = {};
    list.forEach(function (pair) { out[pair[0]] = pair[1]; });
    return out;
  }
  // A page of this site from the ask page (ask/): ids only, so an address can hold nothing but a slug.
  function page(folder, id) { return SLUG.test(id) ? "../" + folder + "/" + id + "/" : null; }
  function linked(text, href) { return href ? el("a", {href: href}, [text]) : document.createTextNode(text); }

  // --- the question ------------------------------------------------------------------------------
  // A value as the build's keys write it: whole numbers without leading zeros or a decimal point.
  function canonical(value) {
    value = String(value).trim();
    return /^\d+(\.\d+)?$/.test(value) ? String(Number(value)) : value;
  }
  function fromQuery(search) {
    var params = new URLSearchParams(search), question = {}, ignored = [];
    params.forEach(function (value, name) {
      if (!value.trim()) return;
      if (index.workload.indexOf(name) < 0) { ignored.push(name); return; }
      question[name] = canonical(value);
    });
    return {question: question, ignored: ignored};
  }
  function toQuery(question) {
    var params = new URLSearchParams();
    ["model", "task"].concat(index.order).concat(Object.keys(question).sort()).forEach(function (name) {
      if (question[name] !== undefined && !params.has(name)) params.set(name, question[name]);
    });
    return params.toString();
  }
  function key(question, defaults) {
    var parts = [];
    Object.keys(question).forEach(function (name) {
      if (name !== "model" && name !== "task" && index.order.indexOf(name) < 0) parts.push(null);  // outside the form
    });
    if (parts.length) return null;
    index.order.forEach(function (name) {
      var value = question[name];
      if (value !== undefined && value !== defaults[name]) parts.push(name + "=" + value);
    });
    return parts.join("&");
  }
  function shellWord(value) {
    return /^[A-Za-z0-9._,:\/=+-]+$/.test(value) ? value : "'" + value.replace(/'/g, "'\\''") + "'";
  }
  function command(question) {
    var words = ["gpukb", "ask"];
    ["model", "task"].concat(index.order).concat(Object.keys(question).sort()).forEach(function (name, i, all) {
      if (question[name] === undefined || all.indexOf(name) !== i) return;
      var flag = {gpus: "--gpu", systems: "--system"}[name];
      if (flag) {
        question[name].split(",").forEach(function (id) { words.push(flag, shellWord(id.trim())); });
      } else {
        words.push("--" + name.replace(/_/g, "-"), shellWord(question[name]));
      }
    });
    if (index.lang !== "en") words.push("--lang", index.lang);
    return words.join(" ");
  }

  // --- the form ----------------------------------------------------------------------------------
  var form, inputs = {};
  function select(name, label, choices, empty) {
    var box = el("select", {name: name, id: "gpukb-ask-" + name});
    if (empty !== null) box.appendChild(el("option", {value: ""}, [empty]));
    choices.forEach(function (pair) { box.appendChild(el("option", {value: pair[0]}, [pair[1]])); });
    inputs[name] = box;
    return el("label", {"class": "gpukb-ask-field", "data-field": name}, [el("span", {}, [label]), box]);
  }
  function text(field) {
    var list = "gpukb-ask-list-" + field.name;
    var box = el("input", {name: field.name, id: "gpukb-ask-" + field.name, type: "text", list: list,
                           inputmode: field.kind === "number" ? "decimal" : "text", autocomplete: "off"});
    inputs[field.name] = box;
    var options = el("datalist", {id: list}, field.suggest.map(function (v) { return el("option", {value: v}); }));
    return el("label", {"class": "gpukb-ask-field", "data-field": field.name}, [el("span", {}, [field.label]), box, options]);
  }
  function buildForm() {
    var ui = index.ui;
    form = el("form", {"class": "gpukb-ask-form", method: "get", action: ""});
    form.appendChild(select("model", ui.model, index.models, null));
    form.appendChild(select("task", ui.task, index.tasks, null));
    index.fields.forEach(function (field) {
      var node;
      if (field.kind === "gpu") node = select(field.name, field.label, index.gpus, ui.any);
      else if (field.kind === "system") node = select(field.name, field.label, index.systems, ui.any);
      else if (field.kind === "framework") node = select(field.name, field.label, [], ui.default);
      else if (field.kind === "objective") node = select(field.name, field.label, index.objectives, ui.default);
      else node = text(field);
      form.appendChild(node);
    });
    form.appendChild(el("button", {type: "submit", "class": "md-button md-button--primary"}, [ui.ask]));
    // below the form's own button: a model the list may not name, by its config.json
    var pasted = el("textarea", {id: "gpukb-ask-config", rows: "4", spellcheck: "false", autocomplete: "off"});
    var find = el("button", {type: "button", id: "gpukb-ask-find", "class": "md-button"}, [ui.find]);
    form.appendChild(el("details", {"class": "gpukb-ask-paste"}, [el("summary", {}, [ui.paste]), pasted, find]));
    find.addEventListener("click", function () { fromConfig(pasted.value); });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var question = {};
      Array.prototype.forEach.call(form.elements, function (box) {
        if (box.name && !box.closest("[hidden]") && box.value.trim()) question[box.name] = canonical(box.value);
      });
      history.pushState(null, "", "?" + toQuery(question));
      show();
      out.scrollIntoView({block: "start"});
    });
    inputs.task.addEventListener("change", function () { adapt(); });
    return form;
  }
  // Fields the task takes are shown; the frameworks are the task's.
  function adapt(chosen) {
    var task = inputs.task.value;
    index.fields.forEach(function (field) {
      form.querySelector('[data-field="' + field.name + '"]').hidden = field.tasks.indexOf(task) < 0;
    });
    var box = inputs.framework, keep = chosen !== undefined ? chosen : box.value;
    while (box.options.length > 1) box.remove(1);
    (index.frameworks[task] || []).forEach(function (id) { box.appendChild(el("option", {value: id}, [id])); });
    box.value = keep && (index.frameworks[task] || []).indexOf(keep) >= 0 ? keep : "";
  }
  function setForm(question) {
    Object.keys(inputs).forEach(function (name) {
      var box = inputs[name];
      if (name === "framework") return;
      if (question[name] !== undefined) box.value = question[name];
      else if (box.tagName === "SELECT" && (name === "model" || name === "task")) box.selectedIndex = 0;
      else box.value = "";
    });
    adapt(question.framework || "");
  }
  function placeholders(defaults) {
    index.fields.forEach(function (field) {
      var box = inputs[field.name];
      if (box.tagName === "INPUT") {
        box.placeholder = defaults[field.name] ? fill(index.ui.default_value, {value: defaults[field.name]}) : "";
      }
    });
  }

  // --- a pasted config.json ---------------------------------------------------------------------
  // The catalog model of its architecture: the figures under the first key of each of index.config_keys it
  // holds (a multimodal config's text_config first), compared with index.architectures; the context length
  // only tells apart models of one architecture.
  var note = null;  // a sentence for the top of the next answer
  function figures(config) {
    var merged = Object.assign({}, config, config.text_config && typeof config.text_config === "object" ? config.text_config : {});
    return index.config_keys.map(function (keys) {
      var found = keys.filter(function (k) { return Number.isInteger(merged[k]); })[0];
      return found === undefined ? null : merged[found];
    });
  }
  function matching(config) {
    var f = figures(config);
    if (f[3] === null) f[3] = f[2];  // no KV-head count: every head is one
    if (f[5] === null) f[5] = 1;  // no expert count: a dense MLP
    var same = Object.keys(index.architectures).filter(function (id) {
      return index.architectures[id].slice(0, 6).every(function (v, i) { return v === f[i]; });
    });
    var exact = same.filter(function (id) { return index.architectures[id][6] === f[6]; });
    return (exact.length ? exact : same)[0] || null;
  }
  function fromConfig(text) {
    var config = null, problem = null;
    try { config = JSON.parse(text); } catch (error) { problem = error.message; }
    if (problem === null && (!config || typeof config !== "object" || Array.isArray(config))) problem = typeof config;
    if (problem !== null) {
      out.replaceChildren(el("p", {"class": "gpukb-ask-config-note"}, [fill(index.ui.bad_config, {error: problem})]));
      return;
    }
    if (!inputs.task.value) { inputs.task.value = index.tasks[0][0]; adapt(); }
    var model = matching(config);
    if (model === null) {
      render([el("p", {"class": "gpukb-ask-outside gpukb-ask-config-note"}, [index.ui.unmatched])],
             {model: "./config.json", task: inputs.task.value});
      return;
    }
    inputs.model.value = model;
    note = fill(index.ui.matched, {model: names(index.models)[model] || model});
    form.requestSubmit();
  }

  // --- the answer --------------------------------------------------------------------------------
  var out;
  // A text of an answer: written once in the file's strings where it recurs, and by its index elsewhere.
  var strings = [];
  function str(value) { return typeof value === "number" ? String(strings[value]) : value; }
  function option(o, gpus, systems) {
    var head = el("p", {"class": "gpukb-ask-plan"}, [
      el("strong", {}, [o.count + " × "]), el("strong", {}, [linked(gpus[o.gpu] || o.gpu, page("gpus", o.gpu))])]);
    if (o.system) head.appendChild(document.createTextNode(" · " + fill(index.ui.rented, {system: systems[o.system] || o.system})));
    var facts = el("ul", {}, [el("li", {}, [str(o.plan)]), el("li", {}, [str(o.memory)])].concat(
      o.figures.map(function (f) { return el("li", {}, [str(f[0]) + (index.lang === "zh" ? "：" : ": ") + str(f[1])]); })));
    return el("li", {"class": "gpukb-ask-option", "data-gpu": o.gpu, "data-count": String(o.count)}, [head, facts]);
  }
  function answer(record, question) {
    var ui = index.ui, gpus = names(index.gpus), systems = names(index.systems), parts = [];
    if (record.error) {
      parts.push(el("p", {"class": "gpukb-ask-refused"}, [ui.refused + " "]), el("pre", {}, [el("code", {}, [record.error])]));
      return parts;
    }
    parts.push(el("p", {"class": "gpukb-ask-headline"}, [el("strong", {}, [str(record.headline)])]));
    parts.push(el("p", {}, [fill(ui.memory, record)]));
    if (record.options.length) {
      parts.push(el("h3", {}, [ui.options]),
                 el("ol", {"class": "gpukb-ask-options"}, record.options.map(function (o) { return option(o, gpus, systems); })));
    } else {
      parts.push(el("p", {}, [ui.none_fits]));
    }
    if (record.warnings.length) {
      parts.push(el("h3", {}, [ui.warnings]), el("ul", {"class": "gpukb-ask-warnings"}, record.warnings.map(function (w) {
        var severity = w.severity === "error" ? "error" : "warning";
        return el("li", {}, [el("span", {"class": "gpukb-badge gpukb-severity-" + severity}, [ui[severity]]), " " + str(w.text) + " (",
                             linked(w.rule, page("rules", w.rule)), ")"]);
      })));
    }
    if (record.scenario && SLUG.test(record.scenario)) {
      parts.push(el("p", {"class": "gpukb-ask-trace"}, [
        linked(ui.trace, "../scenarios/" + record.scenario + "/trace/"), " · ",
        linked(ui.scenario, "../scenarios/" + record.scenario + "/")]));
    } else {
      parts.push(el("p", {"class": "gpukb-ask-trace"}, [ui.explain]));
    }
    return parts;
  }
  function render(parts, question) {
    var ui = index.ui;
    parts.push(el("p", {}, [ui.command]), el("pre", {"class": "gpukb-ask-command"}, [el("code", {}, [command(question)])]),
               el("p", {"class": "gpukb-ask-share"}, [ui.share]));
    out.replaceChildren.apply(out, parts);
  }
  function show() {
    var asked = fromQuery(location.search), question = asked.question, ui = index.ui;
    setForm(question);
    if (!question.model || !question.task) { out.replaceChildren(); return; }
    var notes = asked.ignored.length ? [el("p", {}, [fill(ui.ignored, {names: asked.ignored.join(", ")})])] : [];
    if (note !== null) { notes.unshift(el("p", {"class": "gpukb-ask-config-note"}, [note])); note = null; }
    var known = index.models.some(function (m) { return m[0] === question.model; }) &&
                index.tasks.some(function (t) { return t[0] === question.task; });
    if (!known || !SLUG.test(question.model)) {
      render(notes.concat([el("p", {"class": "gpukb-ask-outside"}, [ui.outside])]), question);
      return;
    }
    out.replaceChildren(el("p", {"class": "gpukb-ask-status"}, [ui.loading]));
    var url = new URL(question.model + "/" + question.task + ".json", base).href;
    fetchJson(url).then(function (data) {
      strings = data.strings || [];
      placeholders(data.defaults);
      var k = key(question, data.defaults), record = k === null ? undefined : data.answers[k];
      if (record === undefined) {
        render(notes.concat([el("p", {"class": "gpukb-ask-outside"}, [ui.outside])]), question);
      } else {
        render(notes.concat(answer(record, question)), question);
      }
    }).catch(function (error) {
      out.replaceChildren(el("p", {"class": "gpukb-ask-status"}, [fill(ui.load_failed, {error: error.message})]));
    });
  }

  fetchJson(base.href).then(function (data) {
    index = data;
    out = el("div", {"class": "gpukb-ask-answer", "aria-live": "polite"});
    root.replaceChildren(out, buildForm());  // the answer first: a shared address opens on it, even on a phone
    window.addEventListener("popstate", show);
    show();
  }).catch(function (error) {
    root.replaceChildren(el("p", {"class": "gpukb-ask-status"}, ["index: " + error.message]));
  });
})();
