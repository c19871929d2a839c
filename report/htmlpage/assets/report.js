// Hover tooltips for the timelines. Without JavaScript the SVG <title>
// elements give the browser's own tooltips; with it, the same text shows at
// once in a readable box, and hovering a bar outlines every attempt of its
// intent. Text is only ever set with textContent: it comes from the system
// under test.
(function () {
  "use strict";
  var tip = document.getElementById("tip");
  if (!tip) { return; }
  var tips = document.querySelectorAll("svg.tl title");
  for (var i = 0; i < tips.length; i++) {
    var t = tips[i], owner = t.parentNode;
    owner.setAttribute("data-tip", t.textContent);
    owner.removeChild(t);
  }
  function related(el, on) {
    var intent = el.getAttribute("data-intent");
    if (intent === null) { return; }
    var svg = el.ownerSVGElement;
    var bars = svg ? svg.querySelectorAll("rect.attempt") : [];
    for (var j = 0; j < bars.length; j++) {
      var same = bars[j].getAttribute("data-intent") === intent;
      bars[j].classList.toggle("hot", on && same);
      bars[j].classList.toggle("dim", on && !same);
    }
  }
  var current = null;
  document.addEventListener("mouseover", function (ev) {
    var el = ev.target && ev.target.closest ? ev.target.closest("[data-tip]") : null;
    if (el === current) { return; }
    if (current) { related(current, false); }
    current = el;
    if (!el) { tip.hidden = true; return; }
    tip.textContent = el.getAttribute("data-tip");
    tip.hidden = false;
    related(el, true);
  });
  document.addEventListener("mousemove", function (ev) {
    if (tip.hidden) { return; }
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > window.innerWidth - 4) { x = Math.max(4, ev.clientX - w - 14); }
    if (y + h > window.innerHeight - 4) { y = Math.max(4, ev.clientY - h - 14); }
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  });
})();
