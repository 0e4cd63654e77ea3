// Keeps each "updated N ago" ticking between two polls. An element with data-age-seconds
// holds the age the server wrote; it counts on from the moment the page received it, so the
// browser's clock never has to agree with the server's. The format is formatting.duration's.
(function () {
  "use strict";
  function duration(total) {
    var seconds = Math.floor(total);
    if (seconds < 60) return seconds + "s";
    var minutes = Math.floor(seconds / 60);
    seconds %= 60;
    if (minutes < 60) return minutes + "m " + String(seconds).padStart(2, "0") + "s";
    var hours = Math.floor(minutes / 60);
    minutes %= 60;
    if (hours < 48) return hours + "h " + String(minutes).padStart(2, "0") + "m";
    return Math.floor(hours / 24) + "d " + (hours % 24) + "h";
  }
  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-age-seconds]").forEach(function (element) {
      if (!element.dataset.receivedAt) element.dataset.receivedAt = String(now);
      var age = Number(element.dataset.ageSeconds) + (now - Number(element.dataset.receivedAt)) / 1000;
      var text = duration(age);
      if (element.textContent !== text) element.textContent = text;
    });
  }
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);

  // A poll renders every <details> closed: one its reader opened (a legend, a task's trace)
  // opens again, and its summary keeps the focus it had. Only those with an id are known
  // again after the swap; htmx itself refocuses any other element with an id.
  var opened = [];
  var focused = null;
  document.addEventListener("htmx:beforeSwap", function () {
    opened = Array.prototype.map.call(document.querySelectorAll("details[id][open]"), function (element) {
      return element.id;
    });
    var active = document.activeElement;
    focused = active && active.tagName === "SUMMARY" && active.parentElement.id ? active.parentElement.id : null;
  });
  document.addEventListener("htmx:afterSwap", function () {
    opened.forEach(function (id) {
      var element = document.getElementById(id);
      if (element && element.tagName === "DETAILS") element.open = true;
    });
    var details = focused && document.getElementById(focused);
    if (details && details.firstElementChild && document.activeElement !== details.firstElementChild) {
      details.firstElementChild.focus();
    }
    opened = [];
    focused = null;
  });
})();
