// WheelGate index router: CloudFront Function (cloudfront-js-2.0), viewer request.
//
// Maps a directory URL of the simple index to the page object S3 holds:
//   /<dir>/  ->  /<dir>/index.html, or /<dir>/index.json when the client's Accept header
//                prefers the PEP 691 JSON form.
//   /<dir>   ->  301 to /<dir>/ (query kept), as PyPI answers: served without its slash, a
//                page's relative links would resolve one level up.
// A last segment with a '.' is a file and passes through unchanged; a directory's never has
// one (project directories are PEP 503 normalized names, in which '.' became '-'), so an index
// directory named with a dot needs its slash. A raw '+' is a space, as S3 reads it on the file
// behaviors that do not run this function, so the whole distribution has one rule: '+' in a
// name is written %2B.
// The Accept header is rewritten to the one flavour chosen, because it is part of the cache
// key: raw Accept values differ per client and would split the cache for no benefit.
// Requests with dot segments or malformed percent-encoding are refused with 400.

var JSON_TYPES = ['application/vnd.pypi.simple.v1+json', 'application/vnd.pypi.simple.latest+json'];
var HTML_TYPES = [
    'application/vnd.pypi.simple.v1+html',
    'application/vnd.pypi.simple.latest+html',
    'text/html',
    'text/*',
    '*/*',
];
var JSON_ACCEPT = 'application/vnd.pypi.simple.v1+json';
var HTML_ACCEPT = 'text/html';

// Highest q-value given to any of `types` in an Accept header (0 when none is listed).
function bestQuality(accept, types) {
    var best = 0;
    var ranges = accept.split(',');
    for (var i = 0; i < ranges.length; i++) {
        var params = ranges[i].split(';');
        var type = params[0].trim().toLowerCase();
        if (types.indexOf(type) === -1) {
            continue;
        }
        var q = 1;
        for (var j = 1; j < params.length; j++) {
            var param = params[j].trim().toLowerCase();
            if (param.indexOf('q=') === 0) {
                q = parseFloat(param.substring(2));
                if (isNaN(q) || q < 0 || q > 1) {
                    q = 0;
                }
            }
        }
        if (q > best) {
            best = q;
        }
    }
    return best;
}

// True when the client asks for the JSON page at least as strongly as for HTML.
function wantsJson(headers) {
    var header = headers.accept;
    if (!header || !header.value) {
        return false;
    }
    var json = bestQuality(header.value, JSON_TYPES);
    return json > 0 && json >= bestQuality(header.value, HTML_TYPES);
}

function badRequest() {
    return {
        statusCode: 400,
        statusDescription: 'Bad Request',
        headers: { 'cache-control': { value: 'no-store' } },
    };
}

function redirect(location) {
    return {
        statusCode: 301,
        statusDescription: 'Moved Permanently',
        headers: { location: { value: location } },
    };
}

// The query string as the client sent it, from CloudFront's parsed form ('' when none).
function queryString(querystring) {
    var parts = [];
    for (var name in querystring) {
        var param = querystring[name];
        var values = param.multiValue ? param.multiValue : [param];
        for (var i = 0; i < values.length; i++) {
            parts.push(values[i].value === '' ? name : name + '=' + values[i].value);
        }
    }
    return parts.length > 0 ? '?' + parts.join('&') : '';
}

function handler(event) {
    var request = event.request;
    var json = wantsJson(request.headers);
    request.headers.accept = { value: json ? JSON_ACCEPT : HTML_ACCEPT };

    // Collapse doubled slashes so //v2//gfx/ and /v2/gfx/ are one page and one cache entry.
    var segments = request.uri.split('/').filter(function (s) { return s.length > 0; });
    for (var i = 0; i < segments.length; i++) {
        var decoded;
        try {
            decoded = decodeURIComponent(segments[i]);
        } catch (e) {
            return badRequest();
        }
        if (decoded === '.' || decoded === '..' || decoded.indexOf('/') !== -1 ||
            decoded.indexOf('\\') !== -1 || decoded.indexOf('\0') !== -1) {
            return badRequest();
        }
    }

    var path = segments.length > 0 ? '/' + segments.join('/') : '';
    var slash = request.uri.charAt(request.uri.length - 1) === '/';
    var last = segments.length > 0 ? segments[segments.length - 1] : '';
    if (!slash && last.indexOf('.') === -1) {
        // Built from the non-empty segments, so never '//host' (an open redirect).
        return redirect(path + '/' + queryString(request.querystring || {}));
    }
    // Sent to S3 as %20, what S3 makes of a raw '+' anyway; a real '+' arrives as %2B.
    path = path.replace(/\+/g, '%20');
    request.uri = slash ? path + '/' + (json ? 'index.json' : 'index.html') : path;
    return request;
}
