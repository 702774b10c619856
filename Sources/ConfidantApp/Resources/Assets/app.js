// Confidant app: enhancements only; every page works without this file. Served from 'self'
// under a CSP that forbids inline script and requires Trusted Types for DOM sinks.
'use strict';
(() => {
  // The one Trusted Types policy: the HTML it passes is what the app's own server rendered with
  // Leaf, which escapes every value by default; it arrives from this origin (live regions, and
  // the chat pages fetched when a conversation is opened beside the list).
  const policy = window.trustedTypes
    ? window.trustedTypes.createPolicy('confidant', { createHTML: (html) => html })
    : { createHTML: (html) => html };

  let baseTitle = document.title.replace(/^\(\d+\) /, '');
  const sources = new Map(); // live region → its EventSource

  // ---- Live regions: the server pushes the region's new HTML as a `fragment` event.

  const nearEnd = (pane) => pane.scrollHeight - pane.scrollTop - pane.clientHeight < 80;
  const toEnd = (pane) => { pane.scrollTop = pane.scrollHeight; };

  const afterUpdate = (region) => {
    // The title counts unread messages, "(3) Chats · Confidant".
    const total = region.querySelector('[data-unread-total]');
    if (total) {
      const count = parseInt(total.getAttribute('data-unread-total'), 10) || 0;
      document.title = count > 0 ? `(${count}) ${baseTitle}` : baseTitle;
    }
    // The disappearing timer's badge in the chat's header.
    const timer = region.querySelector('[data-timer]');
    const badge = document.getElementById('timer-badge');
    if (timer && badge) {
      const value = timer.getAttribute('data-timer') || '';
      badge.hidden = value === '';
      badge.querySelector('.value').textContent = value;
    }
    for (const button of region.querySelectorAll('[data-copy]')) button.hidden = !navigator.clipboard;
    // The message a link pointed at stays marked across updates (a live update replaces its node).
    const pointed = region.dataset.pointed && document.getElementById(region.dataset.pointed);
    if (pointed && region.contains(pointed)) pointed.classList.add('pointed');
    markCurrent();
    region.dispatchEvent(new CustomEvent('confidant:updated'));
  };

  // Earlier lines: the chat's live region is reopened with a larger window (the server renders
  // the latest N lines), keeping the lines in view where they were.
  const showEarlier = (region, link) => {
    if (region.dataset.keep) return; // one step at a time
    const lines = new URL(link.href).searchParams.get('lines');
    const live = new URL(region.getAttribute('data-live'), window.location.href);
    live.searchParams.set('lines', lines);
    region.setAttribute('data-live', live.pathname + live.search);
    region.dataset.keep = String(region.scrollHeight - region.scrollTop);
    link.textContent = 'Loading earlier messages…';
    const here = new URL(window.location.href);
    here.searchParams.set('lines', lines);
    window.history.replaceState(window.history.state, '', here.pathname + here.search);
    connect(region);
  };

  const startLive = (root) => {
    for (const region of root.querySelectorAll('[data-live]')) {
      const scrolls = region.hasAttribute('data-scroll-end');
      const jump = scrolls ? document.getElementById('jump-latest') : null;
      region.atEnd = true;
      if (scrolls) {
        region.addEventListener('scroll', () => {
          region.atEnd = nearEnd(region);
          if (jump && region.atEnd) jump.hidden = true;
          const earlier = region.querySelector('a[data-earlier]');
          if (earlier && region.scrollTop < 40) showEarlier(region, earlier);
        });
        region.addEventListener('click', (event) => {
          const earlier = event.target.closest('a[data-earlier]');
          if (earlier) { event.preventDefault(); showEarlier(region, earlier); }
        });
        // Pictures that load later push the newest lines down: follow them while at the end.
        region.addEventListener('load', () => { if (region.atEnd) toEnd(region); }, true);
        if (jump) jump.addEventListener('click', () => { toEnd(region); jump.hidden = true; region.focus(); });
      }
      connect(region);
      afterUpdate(region);
      // A link to one message (a search result's, a quote's) opens the chat at it, not at the end.
      const hash = decodeURIComponent(window.location.hash.slice(1));
      const target = scrolls && hash ? document.getElementById(hash) : null;
      if (target && region.contains(target)) {
        region.dataset.pointed = hash;
        target.classList.add('pointed');
        target.scrollIntoView({ block: 'center' });
        region.atEnd = nearEnd(region);
      } else if (scrolls) {
        toEnd(region);
      }
    }
  };

  // Opens (or reopens) a region's event stream.
  const connect = (region) => {
    const scrolls = region.hasAttribute('data-scroll-end');
    const jump = scrolls ? document.getElementById('jump-latest') : null;
    if (sources.has(region)) sources.get(region).close();
    const source = new EventSource(region.getAttribute('data-live'));
    sources.set(region, source);
    source.addEventListener('fragment', (event) => {
      // Open menus stay open, and a focused menu button keeps the focus, across the update.
      const open = [...region.querySelectorAll('details[open][data-menu]')].map((menu) => menu.dataset.menu);
      const focused = region.contains(document.activeElement) ? document.activeElement.closest('[data-menu]') : null;
      const focusedID = focused ? focused.dataset.menu : null;
      const focusedItem = focused ? [...focused.querySelectorAll('summary, a, button')].indexOf(document.activeElement) : -1;
      region.innerHTML = policy.createHTML(event.data);
      const menuNamed = (id) => region.querySelector(`details[data-menu="${CSS.escape(id)}"]`);
      for (const id of open) {
        const menu = menuNamed(id);
        if (menu) menu.open = true;
      }
      if (focusedID) {
        const target = menuNamed(focusedID)?.querySelectorAll('summary, a, button')[focusedItem];
        if (target) target.focus();
      }
      afterUpdate(region);
      if (!scrolls) return;
      if (region.dataset.keep) {
        region.scrollTop = region.scrollHeight - Number(region.dataset.keep);
        delete region.dataset.keep;
      } else if (region.atEnd) {
        toEnd(region);
      } else if (jump) {
        jump.hidden = false;
      }
    });
  };

  const stopLive = (root) => {
    for (const [region, source] of sources) {
      if (root.contains(region)) { source.close(); sources.delete(region); }
    }
  };

  // An open chat marks what arrives read, so it follows the chat only while the tab is visible:
  // in the background its stream closes (what arrives stays unread, and notifies), and it opens
  // again, reading what came meanwhile, when the tab is looked at.
  document.addEventListener('visibilitychange', () => {
    for (const region of document.querySelectorAll('[data-live][data-scroll-end]')) {
      if (document.visibilityState === 'hidden') {
        const source = sources.get(region);
        if (source) { source.close(); sources.delete(region); }
      } else if (!sources.has(region)) {
        connect(region);
      }
    }
  });

  // ---- The conversation list: the open chat marked, and a filter by name.

  const markCurrent = () => {
    for (const link of document.querySelectorAll('.pane-list a.conversation')) {
      if (link.pathname === window.location.pathname) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
  };

  const filters = (root) => {
    for (const box of root.querySelectorAll('[data-filter]')) {
      const region = document.getElementById(box.getAttribute('data-filter'));
      const field = box.querySelector('input');
      if (!region || !field) continue;
      box.hidden = false;
      const apply = () => {
        const query = field.value.trim().toLowerCase();
        for (const row of region.querySelectorAll('ul.conversations > li')) {
          const name = (row.querySelector('.name') || row).textContent.toLowerCase();
          row.hidden = query !== '' && !name.split(/\s+/).some((word) => word.startsWith(query)) && !name.startsWith(query);
        }
      };
      field.addEventListener('input', apply);
      region.addEventListener('confidant:updated', apply);
    }
  };

  // ---- The composer: Enter sends (Shift+Enter is a new line), without reloading the page; the
  // message list follows through the live region. Editing a message happens here too.

  let editing = null; // { url, previous draft, form, draft }

  const stopEditing = () => {
    if (!editing) return;
    const { form, draft, previous } = editing;
    editing = null;
    draft.value = previous;
    const banner = document.getElementById('editing');
    if (banner) banner.hidden = true;
    form.querySelector('button[type=submit]').textContent = 'Send';
    draft.focus();
  };

  const startEditing = (url, text) => {
    const form = document.getElementById('composer');
    if (!form) return false;
    const draft = form.querySelector('textarea');
    if (editing) stopEditing();
    editing = { url, previous: draft.value, form, draft };
    draft.value = text;
    const banner = document.getElementById('editing');
    if (banner) banner.hidden = false;
    form.querySelector('button[type=submit]').textContent = 'Save';
    draft.focus();
    return true;
  };

  // The draft is kept on this device (sealed, by the app) as it is typed, a moment after the
  // last key, and comes back when the chat opens; leaving the page or the pane keeps it at once.
  const draftSavers = new WeakMap(); // form -> save now

  const keepDrafts = (form, draft) => {
    const url = form.getAttribute('data-draft');
    if (!url) return () => Promise.resolve();
    let timer = null;
    let saved = Promise.resolve();
    const save = (keepalive = false) => {
      if (timer === null) return saved;
      clearTimeout(timer);
      timer = null;
      const body = new URLSearchParams({ _csrf: form.querySelector('input[name="_csrf"]').value, draft: draft.value });
      const replyTo = form.querySelector('input[name="replyTo"]');
      if (replyTo) body.set('replyTo', replyTo.value);
      saved = saved.then(() => fetch(url, { method: 'POST', body, keepalive })).catch(() => {});
      return saved;
    };
    draft.addEventListener('input', () => {
      if (editing) return; // the composer holds an edit, not the draft
      clearTimeout(timer);
      timer = setTimeout(() => save(), 800);
    });
    window.addEventListener('pagehide', () => save(true));
    draftSavers.set(form, save);
    // Before a send: nothing waits, and a save still under way lands before the send clears it.
    return () => { clearTimeout(timer); timer = null; return saved; };
  };

  const saveDrafts = (root) => {
    for (const form of root.querySelectorAll('form[data-draft]')) {
      const save = draftSavers.get(form);
      if (save) save(true);
    }
  };

  const composers = (root) => {
    for (const form of root.querySelectorAll('form[data-enter-submits]')) {
      const draft = form.querySelector('textarea');
      const grow = () => { draft.style.height = 'auto'; draft.style.height = `${draft.scrollHeight + 2}px`; };
      draft.addEventListener('input', grow);
      const settleDraft = keepDrafts(form, draft);
      draft.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
          event.preventDefault();
          form.requestSubmit();
        } else if (event.key === 'Escape' && editing) {
          event.preventDefault();
          stopEditing();
        }
      });
      form.addEventListener('submit', async (event) => {
        if (form.querySelector('input[name="confirmKeyChange"]')) return; // a full page: the banner goes
        event.preventDefault();
        const token = form.querySelector('input[name="_csrf"]').value;
        const text = draft.value;
        if (editing) {
          const { url } = editing;
          const body = new URLSearchParams({ _csrf: token, text });
          try {
            const response = await fetch(url, { method: 'POST', body, headers: { 'Accept': 'application/json' } });
            if (!response.ok) throw new Error(String(response.status));
            stopEditing();
          } catch (error) {
            window.location.assign(url); // the edit page says what went wrong
          }
          return;
        }
        const body = new URLSearchParams(new FormData(form));
        draft.value = '';
        grow();
        await settleDraft();
        try {
          const response = await fetch(form.action, { method: 'POST', body, headers: { 'Accept': 'application/json' } });
          if (!response.ok) throw new Error(String(response.status));
          const result = await response.json();
          if (result.reload) { draft.value = text; window.location.assign(result.reload); return; }
          // A reply went: the next message answers nothing.
          const replyTo = form.querySelector('input[name="replyTo"]');
          if (replyTo) replyTo.remove();
          const replying = document.getElementById('replying');
          if (replying) replying.hidden = true;
        } catch (error) {
          draft.value = text;
          form.submit();
        }
      });
    }
  };

  // ---- Files: the composer's 📎 button, dropping files on the chat and pasting them send
  // them through the attach form (with the draft as the caption).

  const attachments = (root) => {
    for (const button of root.querySelectorAll('[data-attach]')) {
      const input = document.getElementById(button.getAttribute('data-attach'));
      const form = input && input.form;
      if (!form) continue;
      const composer = button.form;
      const send = (files) => {
        if (!files || files.length === 0) return;
        const draft = composer && composer.querySelector('textarea');
        const caption = form.querySelector('input[name="caption"]');
        if (draft && caption && !editing && draft.value.trim() !== '' && caption.value === '') {
          caption.value = draft.value;
          draft.value = '';
        }
        if (files !== input.files) input.files = files;
        form.requestSubmit();
      };
      button.hidden = false;
      button.addEventListener('click', () => { input.dataset.sendOnPick = '1'; input.click(); });
      input.addEventListener('change', () => {
        if (input.dataset.sendOnPick !== '1') return;
        delete input.dataset.sendOnPick;
        send(input.files);
      });
      const pane = button.closest('.pane-main') || document.body;
      pane.addEventListener('dragover', (event) => {
        if (![...event.dataTransfer.types].includes('Files')) return;
        event.preventDefault();
        if (composer) composer.classList.add('dropping');
      });
      pane.addEventListener('dragleave', (event) => {
        if (composer && !pane.contains(event.relatedTarget)) composer.classList.remove('dropping');
      });
      pane.addEventListener('drop', (event) => {
        if (!event.dataTransfer.files.length) return;
        event.preventDefault();
        if (composer) composer.classList.remove('dropping');
        send(event.dataTransfer.files);
      });
      const draft = composer && composer.querySelector('textarea');
      if (draft) {
        draft.addEventListener('paste', (event) => {
          if (!event.clipboardData || event.clipboardData.files.length === 0) return;
          event.preventDefault();
          send(event.clipboardData.files);
        });
      }
    }
  };

  // ---- Uploads with a progress bar: the form goes by XMLHttpRequest (fetch reports no upload
  // progress); a refusal is shown in the form, success goes to the page the server names.

  const uploads = (root) => {
    for (const form of root.querySelectorAll('form[data-upload-progress]')) {
      const box = document.getElementById(form.getAttribute('data-upload-progress'));
      const bar = box && box.querySelector('progress');
      const text = box && box.querySelector('.progress-text');
      const problem = form.querySelector('.upload-error');
      const button = form.querySelector('button[type=submit]');
      form.addEventListener('submit', (event) => {
        if (!box || !window.XMLHttpRequest) return;
        event.preventDefault();
        const details = form.closest('details');
        if (details) details.open = true;
        const request = new XMLHttpRequest();
        request.open('POST', form.action);
        request.setRequestHeader('Accept', 'application/json');
        request.responseType = 'json';
        request.upload.addEventListener('progress', (progress) => {
          if (!progress.lengthComputable) return;
          const percent = Math.round((100 * progress.loaded) / progress.total);
          bar.value = percent;
          text.textContent = percent < 100 ? `Uploading: ${percent} %` : 'Encrypting…';
        });
        const fail = (message) => {
          box.hidden = true;
          button.disabled = false;
          if (problem) { problem.textContent = message; problem.hidden = false; }
        };
        request.addEventListener('load', () => {
          const answer = request.response || {};
          if (request.status >= 200 && request.status < 300 && answer.location) {
            window.location.assign(answer.location);
          } else {
            fail(answer.error || answer.reason || `The upload was refused (${request.status}).`);
          }
        });
        request.addEventListener('error', () => fail('The upload did not reach the app. Is it still running?'));
        if (problem) problem.hidden = true;
        box.hidden = false;
        bar.value = 0;
        text.textContent = 'Uploading: 0 %';
        button.disabled = true;
        request.send(new FormData(form));
      });
    }
  };

  // ---- Smaller helpers: picture previews, the keypad, the resend countdown.

  const previews = (root) => {
    // A picked picture is previewed before it is sent (a blob: URL of the file, in this page only).
    for (const input of root.querySelectorAll('input[type=file][data-preview]')) {
      const preview = document.getElementById(input.getAttribute('data-preview'));
      input.addEventListener('change', () => {
        const file = input.files && input.files[0];
        if (!preview) return;
        if (file && /^image\/(png|jpeg)$/.test(file.type)) {
          preview.src = URL.createObjectURL(file);
          preview.hidden = false;
        } else {
          preview.hidden = true;
        }
      });
    }
  };

  const keypads = (root) => {
    // The arithmetic step's keypad types into its field.
    for (const keypad of root.querySelectorAll('[data-keypad-for]')) {
      const field = document.getElementById(keypad.getAttribute('data-keypad-for'));
      keypad.addEventListener('click', (event) => {
        const key = event.target.closest('button[data-key]');
        if (!key || !field) return;
        const value = key.getAttribute('data-key');
        field.value = value === 'back' ? field.value.slice(0, -1) : field.value + value;
        field.focus();
      });
    }
  };

  const countdowns = (root) => {
    // "Send the code again" waits out the server's cool-down, counting down beside the button
    // (without this script the server says how long to wait).
    for (const button of root.querySelectorAll('button[data-wait-seconds]')) {
      let left = parseInt(button.getAttribute('data-wait-seconds'), 10) || 0;
      const label = button.parentElement.querySelector('.countdown');
      const tick = () => {
        if (left <= 0) { button.disabled = false; if (label) label.textContent = ''; return; }
        button.disabled = true;
        if (label) label.textContent = `You can ask for a new code in ${left} s.`;
        left -= 1;
        window.setTimeout(tick, 1000);
      };
      tick();
    }
  };

  const enhance = (root) => {
    startLive(root);
    filters(root);
    composers(root);
    attachments(root);
    uploads(root);
    previews(root);
    keypads(root);
    countdowns(root);
  };

  // ---- Opening a conversation beside the list without loading the whole page.

  const wide = window.matchMedia('(min-width: 761px)');

  const openInPane = async (url, push) => {
    const pane = document.querySelector('.panes > .pane-main');
    if (!pane) { window.location.assign(url); return; }
    let page;
    try {
      const response = await fetch(url, { headers: { 'Accept': 'text/html' } });
      if (!response.ok || new URL(response.url).pathname !== new URL(url, window.location.href).pathname) {
        throw new Error(String(response.status));
      }
      page = new DOMParser().parseFromString(policy.createHTML(await response.text()), 'text/html');
    } catch (error) {
      window.location.assign(url);
      return;
    }
    const next = page.querySelector('.panes > .pane-main');
    if (!next) { window.location.assign(url); return; }
    if (editing) stopEditing();
    saveDrafts(pane);
    stopLive(pane);
    const adopted = document.importNode(next, true);
    pane.replaceWith(adopted);
    document.querySelector('.panes').classList.toggle('has-chat', adopted.classList.contains('chat'));
    baseTitle = page.title.replace(/^\(\d+\) /, '');
    document.title = baseTitle;
    if (push) window.history.pushState({ pane: true }, '', url);
    enhance(adopted);
    markCurrent();
    const draft = adopted.querySelector('#draft');
    if (draft) draft.focus();
    const list = document.getElementById('list-live');
    if (list) afterUpdate(list);
  };

  // A long press on a message (touch screens have no hover) opens its menu, as in Signal and
  // WhatsApp; moving the finger (scrolling) or lifting it early cancels.
  let press = null;
  const cancelPress = () => {
    if (press) clearTimeout(press.timer);
    press = null;
  };
  document.addEventListener('pointerdown', (event) => {
    suppressClick = false;
    if (event.pointerType !== 'touch') return;
    const message = event.target.closest('li.message');
    const menu = message?.querySelector('details.message-menu');
    if (!menu || event.target.closest('a, button, summary, input, textarea')) return;
    cancelPress();
    press = {
      x: event.clientX, y: event.clientY,
      timer: setTimeout(() => {
        press = null;
        for (const other of document.querySelectorAll('details.menu[open]')) other.open = false;
        menu.open = true;
        menu.querySelector('.menu-items a, .menu-items button:not([hidden])')?.focus();
        suppressClick = true;
      }, 500),
    };
  });
  document.addEventListener('pointermove', (event) => {
    if (press && Math.hypot(event.clientX - press.x, event.clientY - press.y) > 10) cancelPress();
  });
  document.addEventListener('pointerup', cancelPress);
  document.addEventListener('pointercancel', cancelPress);
  // The click that ends a long press does not also act on what is under the finger.
  let suppressClick = false;
  document.addEventListener('click', (event) => {
    if (suppressClick) {
      suppressClick = false;
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);
  document.addEventListener('contextmenu', (event) => {
    if (event.target.closest('li.message') && event.pointerType === 'touch') event.preventDefault();
  });

  document.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) {
      return;
    }
    const target = event.target;
    // A conversation in the list opens beside it on a wide window.
    const row = target.closest('.pane-list a.conversation');
    if (row && wide.matches && document.querySelector('.panes > .pane-main')) {
      event.preventDefault();
      if (row.pathname !== window.location.pathname) openInPane(row.href, true);
      return;
    }
    // Edit a message in the composer.
    const edit = target.closest('a[data-edit]');
    if (edit) {
      const text = edit.closest('.message')?.querySelector('.text');
      if (startEditing(edit.href, text ? text.textContent : '')) {
        event.preventDefault();
        edit.closest('details').open = false;
      }
      return;
    }
    // Copy a message's text.
    const copy = target.closest('[data-copy]');
    if (copy && navigator.clipboard) {
      const text = copy.closest('.message')?.querySelector('.text');
      navigator.clipboard.writeText(text ? text.textContent : '').then(
        () => { copy.closest('details').open = false; },
        () => { copy.textContent = 'Copy (not allowed here)'; });
      return;
    }
    // A picture in a chat opens in the app's viewer, not as the raw file.
    const picture = target.closest('a[data-viewer-image]');
    if (picture && window.HTMLDialogElement) {
      event.preventDefault();
      showPicture(picture.href, picture.querySelector('img')?.alt || '');
      return;
    }
    // A click elsewhere closes open menus.
    for (const menu of document.querySelectorAll('details.menu[open]')) {
      if (!menu.contains(target)) menu.open = false;
    }
  });

  let viewer = null;
  const showPicture = (url, name) => {
    if (!viewer) {
      viewer = document.createElement('dialog');
      viewer.className = 'photo-viewer';
      viewer.setAttribute('aria-label', 'Photo');
      const image = document.createElement('img');
      const close = document.createElement('form');
      close.method = 'dialog';
      const button = document.createElement('button');
      button.type = 'submit';
      button.className = 'secondary';
      button.textContent = 'Close';
      close.append(button);
      viewer.append(image, close);
      viewer.addEventListener('click', (event) => { if (event.target === viewer) viewer.close(); });
      document.body.append(viewer);
    }
    const image = viewer.querySelector('img');
    image.src = url;
    image.alt = name;
    viewer.showModal();
  };

  window.addEventListener('popstate', () => {
    if (document.querySelector('.panes')) openInPane(window.location.href, false);
  });

  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      // Escape closes open menus, and gives focus back to their button.
      for (const menu of document.querySelectorAll('details.menu[open]')) {
        menu.open = false;
        menu.querySelector('summary').focus();
      }
    }
    // The vault's photo viewer: arrow keys for the previous and next photo, Escape back to the vault.
    if (!document.querySelector('[data-viewer]') || event.altKey || event.ctrlKey || event.metaKey) return;
    const target = { ArrowLeft: '[data-key-left]', ArrowRight: '[data-key-right]', Escape: '[data-key-escape]' }[event.key];
    const link = target && document.querySelector(target);
    if (link) { event.preventDefault(); window.location.assign(link.href); }
  });

  enhance(document);
  markCurrent();
})();
